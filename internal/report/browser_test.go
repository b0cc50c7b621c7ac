//go:build unix

package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The package's browser tests share one headless Chromium, started on
// first use and driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe); each page opens in a tab of its own. A
// Chromium started for each page cost most of the package's test CPU.

// TestMain stops the shared browser once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	shared.close()
	os.Exit(code)
}

// pageLoad is what the browser made of one page.
type pageLoad struct {
	dom     string      // the document's HTML once it loaded
	console []string    // what it logged: console calls, uncaught errors, failed loads
	shot    image.Image // the viewport, when asked for
}

// openPage loads the local file page in a tab whose viewport is width by
// height, and returns what the browser made of it. A missing chromium
// fails the test with an instruction: never a skip.
func openPage(t *testing.T, page string, width, height int, shot bool) pageLoad {
	t.Helper()
	b, err := shared.get()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	pl, err := b.load(ctx, page, width, height, shot)
	if err != nil {
		t.Fatalf("chromium, %s: %v", page, err)
	}
	return pl
}

// cdpMessage is one DevTools protocol message: a command's answer (ID),
// or an event (Method) of a tab's session.
type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct{ Message string }
	SessionID string `json:"sessionId,omitempty"`
}

// browser is one Chromium process and its protocol pipe.
type browser struct {
	cmd  *exec.Cmd
	dead chan struct{} // closed when the pipe from Chromium ends

	mu       sync.Mutex
	w        io.WriteCloser
	next     int
	answers  map[int]chan cdpMessage
	sessions map[string]chan cdpMessage
	lost     map[string]bool // sessions whose events overflowed their channel
}

// sharedBrowser is the package's one browser, started on first use.
type sharedBrowser struct {
	once sync.Once
	b    *browser
	dir  string // its profile directory
	err  error
}

var shared sharedBrowser

func (s *sharedBrowser) get() (*browser, error) {
	s.once.Do(func() { s.b, s.dir, s.err = startBrowser() })
	return s.b, s.err
}

// close stops the browser, all of its process group, and removes its
// profile directory.
func (s *sharedBrowser) close() {
	if s.b != nil {
		s.b.w.Close()
		syscall.Kill(-s.b.cmd.Process.Pid, syscall.SIGKILL)
		s.b.cmd.Wait()
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// startBrowser starts Debian's headless chromium with the flags that keep
// it off the network, in a profile directory of its own (returned, for
// removal), in its own process group, as the group is killed at the end.
func startBrowser() (*browser, string, error) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		return nil, "", fmt.Errorf("chromium is needed to check report.html in a real browser: install it with `apt-get install -y chromium` (scripts/deps.sh does this for make test): %v", err)
	}
	dir, err := os.MkdirTemp("", "rlctl-chromium-")
	if err != nil {
		return nil, "", err
	}
	// Chromium reads commands from its fd 3 and writes to its fd 4.
	toR, toW, err := os.Pipe()
	if err != nil {
		return nil, dir, err
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		return nil, dir, err
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--user-data-dir="+dir, "--hide-scrollbars",
		"--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toR, fromW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, dir, fmt.Errorf("start chromium: %v", err)
	}
	toR.Close()
	fromW.Close()
	b := &browser{cmd: cmd, w: toW, dead: make(chan struct{}),
		answers: map[int]chan cdpMessage{}, sessions: map[string]chan cdpMessage{}, lost: map[string]bool{}}
	go b.read(fromR)
	return b, dir, nil
}

// read hands each message from Chromium to the command or tab waiting for it.
func (b *browser) read(r io.ReadCloser) {
	defer close(b.dead)
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if c := b.answers[m.ID]; c != nil {
				c <- m
				delete(b.answers, m.ID)
			}
		} else if c := b.sessions[m.SessionID]; c != nil {
			select {
			case c <- m:
			default: // load fails the page: what it logged is not all there
				b.lost[m.SessionID] = true
			}
		}
		b.mu.Unlock()
	}
}

// call sends a command, to the browser or to a tab's session, and decodes
// its result into out (when not nil).
func (b *browser) call(ctx context.Context, session, method string, params, out any) error {
	c := make(chan cdpMessage, 1)
	b.mu.Lock()
	b.next++
	id := b.next
	b.answers[id] = c
	cmd := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		cmd["sessionId"] = session
	}
	msg, err := json.Marshal(cmd)
	if err == nil {
		_, err = b.w.Write(append(msg, 0))
	}
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %v", method, err)
	}
	select {
	case m := <-c:
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-b.dead:
		return fmt.Errorf("%s: chromium exited", method)
	case <-ctx.Done():
		return fmt.Errorf("%s: %v", method, ctx.Err())
	}
}

// load opens page in a new tab, waits for its load event, and reads what
// a test looks at; the tab is closed after.
func (b *browser) load(ctx context.Context, page string, width, height int, shot bool) (pageLoad, error) {
	var pl pageLoad
	var target struct{ TargetID string }
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return pl, err
	}
	defer b.call(context.Background(), "", "Target.closeTarget", map[string]any{"targetId": target.TargetID}, nil)
	var attached struct{ SessionID string }
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return pl, err
	}
	s := attached.SessionID
	events := make(chan cdpMessage, 1024)
	b.mu.Lock()
	b.sessions[s] = events
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.sessions, s)
		delete(b.lost, s)
		b.mu.Unlock()
	}()
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := b.call(ctx, s, m, map[string]any{}, nil); err != nil {
			return pl, err
		}
	}
	if err := b.call(ctx, s, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		return pl, err
	}
	if err := b.call(ctx, s, "Page.navigate", map[string]any{"url": "file://" + page}, nil); err != nil {
		return pl, err
	}
	for loaded := false; !loaded; {
		select {
		case m := <-events:
			loaded = m.Method == "Page.loadEventFired"
			pl.console = appendConsole(pl.console, m)
		case <-ctx.Done():
			return pl, fmt.Errorf("no load event: %v", ctx.Err())
		}
	}
	var dom struct{ Result struct{ Value string } }
	if err := b.call(ctx, s, "Runtime.evaluate", map[string]any{
		"expression": "document.documentElement.outerHTML", "returnByValue": true}, &dom); err != nil {
		return pl, err
	}
	pl.dom = dom.Result.Value
	if shot {
		var png64 struct{ Data string }
		if err := b.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png"}, &png64); err != nil {
			return pl, err
		}
		raw, err := base64.StdEncoding.DecodeString(png64.Data)
		if err != nil {
			return pl, err
		}
		if pl.shot, err = png.Decode(bytes.NewReader(raw)); err != nil {
			return pl, fmt.Errorf("decode screenshot: %v", err)
		}
	}
	// Events sent before the last answer are already here: the pipe keeps
	// their order.
	for {
		select {
		case m := <-events:
			pl.console = appendConsole(pl.console, m)
		default:
			b.mu.Lock()
			lost := b.lost[s]
			b.mu.Unlock()
			if lost {
				return pl, fmt.Errorf("the tab sent more events than were kept (%d): what the page logged is not all here", cap(events))
			}
			return pl, nil
		}
	}
}

// appendConsole adds to lines what event m says the page logged, in the
// words of Chromium's own log: "CONSOLE" for a console call, "Uncaught"
// for an error nothing caught, and a log entry's text (a failed load's
// "Failed to load resource: net::ERR_…", a refusal's "Refused to …").
func appendConsole(lines []string, m cdpMessage) []string {
	switch m.Method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string
			Args []struct {
				Value       any
				Description string
			}
		}
		json.Unmarshal(m.Params, &p)
		var words []string
		for _, a := range p.Args {
			if a.Value != nil {
				words = append(words, fmt.Sprint(a.Value))
			} else {
				words = append(words, a.Description)
			}
		}
		return append(lines, fmt.Sprintf("CONSOLE(%s) %s", p.Type, strings.Join(words, " ")))
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string
				Exception struct{ Description string }
			}
		}
		json.Unmarshal(m.Params, &p)
		return append(lines, fmt.Sprintf("Uncaught %s %s", p.ExceptionDetails.Text, p.ExceptionDetails.Exception.Description))
	case "Log.entryAdded":
		var p struct {
			Entry struct{ Source, Level, Text, URL string }
		}
		json.Unmarshal(m.Params, &p)
		return append(lines, fmt.Sprintf("%s %s: %s %s", p.Entry.Source, p.Entry.Level, p.Entry.Text, p.Entry.URL))
	}
	return lines
}
