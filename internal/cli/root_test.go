package cli

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redistest"
)

// syncBuffer is a bytes.Buffer safe for the signal goroutine and the
// command writing at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testFactory returns a Factory with in-memory streams and an empty
// environment (plus env).
func testFactory(out io.Writer, env map[string]string) (*Factory, *syncBuffer) {
	errOut := &syncBuffer{}
	return &Factory{
		IO:     &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
		Getenv: func(k string) string { return env[k] },
		Now:    time.Now,
	}, errOut
}

func noExit(t *testing.T) func(int) {
	return func(code int) { t.Errorf("exit(%d) called", code) }
}

func TestRootHelpListsCommands(t *testing.T) {
	out := &syncBuffer{}
	f, _ := testFactory(out, nil)
	if code := Run(f, []string{"--help"}, nil, noExit(t)); code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	for _, c := range NewRootCmd(f).Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || c.Annotations[helpTopicAnnotation] != "" {
			continue // help topics are checked by TestHelpTopicsListed
		}
		if !strings.Contains(out.String(), "  "+c.Name()+" ") {
			t.Errorf("rlctl --help does not list %q:\n%s", c.Name(), out)
		}
	}
}

// TestEveryCommandHelpListsExitCodes walks the whole command tree, so
// commands added later are covered too.
func TestEveryCommandHelpListsExitCodes(t *testing.T) {
	f, _ := testFactory(io.Discard, nil)
	var walk func(c *cobra.Command)
	var paths [][]string
	walk = func(c *cobra.Command) {
		if c.Name() != "help" && c.Name() != "completion" && c.Annotations[helpTopicAnnotation] == "" {
			path := strings.Fields(c.CommandPath())[1:]
			paths = append(paths, path)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRootCmd(f))
	if len(paths) < 2 {
		t.Fatalf("command tree has %d commands", len(paths))
	}
	for _, path := range paths {
		t.Run(strings.Join(append([]string{"rlctl"}, path...), " "), func(t *testing.T) {
			out := &syncBuffer{}
			f, _ := testFactory(out, nil)
			if code := Run(f, append(append([]string{}, path...), "--help"), nil, noExit(t)); code != 0 {
				t.Fatalf("--help exited %d", code)
			}
			help := out.String()
			if !strings.Contains(help, "Exit status:") {
				t.Fatalf("help lacks the exit status section:\n%s", help)
			}
			for _, e := range exitcode.Table {
				if !strings.Contains(help, fmt.Sprintf("  %-4d %s", e.Code, e.Meaning)) {
					t.Errorf("help lacks exit code %d (%s)", e.Code, e.Meaning)
				}
			}
		})
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	tests := [][]string{
		{"--no-such-flag"},
		{"-o", "yaml", "version"},
		{"--timeout", "0s", "version"},
		{"ping", "--count", "-1"},
		{"ping", "extra-arg"},
		{"no-such-command"},
		{"ping", "--redis", "redis://h:1?nope=1"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			f, errOut := testFactory(io.Discard, nil)
			if code := Run(f, args, nil, noExit(t)); code != int(exitcode.Usage) {
				t.Errorf("exit %d, want %d; stderr: %s", code, exitcode.Usage, errOut)
			}
		})
	}
}

// TestFirstSignalCancels: the first SIGINT cancels the command's context;
// a command blocked on Redis returns at once and rlctl exits 130.
func TestFirstSignalCancels(t *testing.T) {
	addr, accepted := redistest.Silent(t)
	f, errOut := testFactory(io.Discard, nil)
	sig := make(chan os.Signal, 2)
	done := make(chan int, 1)
	go func() {
		done <- Run(f, []string{"ping", "--redis", "redis://" + addr, "--timeout", "60s"}, sig, noExit(t))
	}()
	<-accepted // ping is now waiting for an answer that never comes
	sig <- syscall.SIGINT
	select {
	case code := <-done:
		if code != int(exitcode.Interrupted) {
			t.Errorf("exit %d, want %d; stderr: %s", code, exitcode.Interrupted, errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("command did not stop after SIGINT (timeout is 60s)")
	}
	if !strings.Contains(errOut.String(), "interrupted") {
		t.Errorf("stderr does not say it was interrupted: %q", errOut)
	}
}

// blockingWriter blocks every Write until released, to hold a command in
// a place that does not watch its context.
type blockingWriter struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	<-w.release
	return len(p), nil
}

// TestSecondSignalExits: a second SIGINT while the command still runs
// calls exit(130) at once.
func TestSecondSignalExits(t *testing.T) {
	w := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
	f, errOut := testFactory(w, nil)
	sig := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	done := make(chan int, 1)
	go func() {
		done <- Run(f, []string{"ping", "--redis", "embedded", "--count", "1"}, sig, func(code int) { exited <- code })
	}()
	<-w.started // the command is stuck writing its output
	sig <- syscall.SIGINT
	sig <- syscall.SIGINT
	select {
	case code := <-exited:
		if code != int(exitcode.Interrupted) {
			t.Errorf("exit(%d), want exit(%d)", code, exitcode.Interrupted)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("second SIGINT did not call exit")
	}
	close(w.release)
	<-done
	if !strings.Contains(errOut.String(), "interrupted again") {
		t.Errorf("stderr: %q", errOut)
	}
}

// A password in --redis is visible in the process list: rlctl says so
// once, without the password, and points at REDISCLI_AUTH; a password
// from the environment is not on the command line and gets no warning.
func TestPasswordOnCommandLineWarnsOnce(t *testing.T) {
	const hint = "set REDISCLI_AUTH instead"
	f, errOut := testFactory(&syncBuffer{}, nil)
	Run(f, []string{"ping", "--timeout", "200ms", "--redis", "redis://:hunter2@127.0.0.1:1"}, nil, noExit(t))
	if got := strings.Count(errOut.String(), hint); got != 1 || strings.Contains(errOut.String(), "hunter2") {
		t.Errorf("--redis with a password: hint %d times, stderr:\n%s", got, errOut.String())
	}
	f, errOut = testFactory(&syncBuffer{}, map[string]string{"RLCTL_REDIS_URL": "redis://:hunter2@127.0.0.1:1"})
	Run(f, []string{"ping", "--timeout", "200ms"}, nil, noExit(t))
	if strings.Contains(errOut.String(), hint) {
		t.Errorf("password from the environment: warned anyway:\n%s", errOut.String())
	}
	f, errOut = testFactory(&syncBuffer{}, nil)
	Run(f, []string{"ping", "--timeout", "200ms", "--redis", "redis://127.0.0.1:1"}, nil, noExit(t))
	if strings.Contains(errOut.String(), hint) {
		t.Errorf("no password: warned anyway:\n%s", errOut.String())
	}
}

// rlctl asks Go's collector to keep the heap under MemoryLimit unless the
// environment sets GOMEMLIMIT itself: an overload run's heap otherwise
// grows to twice what is live (459MB RSS for a 60s open run at
// 1,000,000/s, 274MB with the limit).
func TestSoftMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	debug.SetMemoryLimit(math.MaxInt64)
	softMemoryLimit(func(string) string { return "" })
	if got := debug.SetMemoryLimit(-1); got != MemoryLimit {
		t.Errorf("memory limit %d, want %d", got, MemoryLimit)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	softMemoryLimit(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	})
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT set, but the limit became %d", got)
	}
}
