//go:build unix

package report

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromium runs Debian's headless chromium on a local file with the flags
// that keep it off the network, and returns its stdout and stderr. A
// missing chromium fails the test with an instruction: never a skip.
func chromium(t *testing.T, page string, extra ...string) (stdout, stderr string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is needed to check report.html in a real browser: install it with `apt-get install -y chromium` (scripts/deps.sh does this for make test): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--user-data-dir=" + t.TempDir(), "--hide-scrollbars",
		"--enable-logging=stderr", "--v=0",
	}, extra...)
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--window-size=") }) {
		args = append(args, "--window-size=1400,2000")
	}
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	// Chromium forks helpers; a timeout must stop all of them, so it runs
	// in its own process group and the group is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr:\n%s", extra, err, errb.String())
	}
	// Helpers may outlive the browser process briefly; let the group go
	// before the temporary profile directory is removed.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return out.String(), errb.String()
}

// consoleProblems picks the lines of chromium's log that say the page
// misbehaved: console messages, uncaught errors, failed loads.
var consoleRE = regexp.MustCompile(`(?i)CONSOLE|Uncaught|net::ERR_|Failed to load resource|Refused to`)

func consoleProblems(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if consoleRE.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// countNear counts pixels within tol of c in each channel. It reads the
// pixel bytes directly: img.At per pixel is slow under -race.
func countNear(img image.Image, c color.RGBA, tol int) int {
	var rgba *image.RGBA
	switch v := img.(type) {
	case *image.RGBA:
		rgba = v
	case *image.NRGBA:
		// An opaque screenshot has the same bytes either way.
		rgba = &image.RGBA{Pix: v.Pix, Stride: v.Stride, Rect: v.Rect}
	default:
		b := img.Bounds()
		rgba = image.NewRGBA(b)
		draw.Draw(rgba, b, img, b.Min, draw.Src)
	}
	n := 0
	for i := 0; i+3 < len(rgba.Pix); i += 4 {
		p := rgba.Pix[i : i+3 : i+3]
		if abs(int(p[0])-int(c.R)) <= tol && abs(int(p[1])-int(c.G)) <= tol && abs(int(p[2])-int(c.B)) <= tol {
			n++
		}
	}
	return n
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func screenshot(t *testing.T, page string) (image.Image, string) {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	_, stderr := chromium(t, page, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	return img, stderr
}

// chartReport is one scenario with every chart, first on the page so all
// charts fit in the screenshot.
func chartReport(withResult bool) *Report {
	r := fixture()
	r.Scenarios = r.Scenarios[:1]
	if !withResult {
		r.Scenarios[0].Result = nil
	}
	return r
}

// TestHTMLInBrowser opens report.html in headless chromium: it loads with
// no console errors or fetches, and its charts are really drawn (the
// series, limit and bar colours appear on screen, and do not without
// chart data).
func TestHTMLInBrowser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	with, without := filepath.Join(dir, "with"), filepath.Join(dir, "without")
	if err := WriteDir(with, chartReport(true), []string{"html"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(without, chartReport(false), []string{"html"}); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(with, "report.html")

	t.Run("dom", func(t *testing.T) {
		t.Parallel()
		dom, stderr := chromium(t, page, "--dump-dom")
		if p := consoleProblems(stderr); len(p) > 0 {
			t.Errorf("console problems:\n%s", strings.Join(p, "\n"))
		}
		for _, kind := range []string{ChartTimeline, ChartSliding, ChartLatency, ChartGateways} {
			re := regexp.MustCompile(`(?s)<figure class="chart" data-chart="` + kind + `" id="chart-lua-fixed-window-holds-` + kind + `">.*?<svg[^>]*viewBox="0 0 [1-9][0-9.]* [1-9][0-9.]*".*?(<path class="measured"[^>]* d="M[^"]+"|<rect class="bar").*?</svg>`)
			if !re.MatchString(dom) {
				t.Errorf("chart %s: no sized <svg> with drawn data in the browser's DOM", kind)
			}
		}
	})
	colours := []struct {
		name string
		c    color.RGBA
		min  int
	}{
		{"series lines", seriesColor, 300},
		{"published-limit lines", limitColor, 100},
		{"gateway bars", barColor, 2000},
		{"fault shading", faultColor, 2000},
		{"outage shading", outageColor, 300},
	}
	t.Run("pixels", func(t *testing.T) {
		t.Parallel()
		img, stderr := screenshot(t, page)
		if p := consoleProblems(stderr); len(p) > 0 {
			t.Errorf("console problems:\n%s", strings.Join(p, "\n"))
		}
		for _, c := range colours {
			if got := countNear(img, c.c, 12); got < c.min {
				t.Errorf("%s: %d pixels of their colour on screen, want at least %d", c.name, got, c.min)
			}
		}
	})
	t.Run("pixels without charts", func(t *testing.T) {
		t.Parallel()
		// The same page without chart data must not show the colours, or
		// the check above would prove nothing.
		img, _ := screenshot(t, filepath.Join(without, "report.html"))
		for _, c := range colours {
			if got := countNear(img, c.c, 12); got > c.min/10 {
				t.Errorf("%s: the page without charts already has %d such pixels", c.name, got)
			}
		}
	})
	t.Run("console check catches errors", func(t *testing.T) {
		t.Parallel()
		// The detector must see a real console error, or a clean result
		// above means nothing.
		bad := filepath.Join(t.TempDir(), "bad.html")
		if err := os.WriteFile(bad, []byte(`<!DOCTYPE html><html><body><script>console.error("boom")</script><img src="missing.png"></body></html>`), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr := chromium(t, bad, "--dump-dom")
		if len(consoleProblems(stderr)) == 0 {
			t.Errorf("a page logging console.error showed no console problem; stderr:\n%s", stderr)
		}
	})
}

// TestHTMLSelfContained checks the page names nothing outside itself: no
// scripts, stylesheets, images, fonts or frames from anywhere.
func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := HTML(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<script`),
		regexp.MustCompile(`(?i)<link`),
		regexp.MustCompile(`(?i)<img`),
		regexp.MustCompile(`(?i)<iframe`),
		regexp.MustCompile(`(?i)url\(`),
		regexp.MustCompile(`(?i)@import`),
		regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//`),
		regexp.MustCompile(`(?i)xlink:href\s*=\s*"http`),
	} {
		if loc := bad.FindStringIndex(page); loc != nil {
			t.Errorf("report.html refers outside itself: %q", page[max(0, loc[0]-40):min(len(page), loc[1]+60)])
		}
	}
	if strings.Count(page, `<figure class="chart"`) != 4 {
		t.Errorf("want 4 charts (one scenario has series), got %d", strings.Count(page, `<figure class="chart"`))
	}
	if strings.Contains(page, "<50 gateways>") || !strings.Contains(page, "&lt;50 gateways&gt;") {
		t.Error("scenario text is not escaped")
	}
}
