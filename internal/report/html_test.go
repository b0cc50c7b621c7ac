//go:build unix

package report

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// consoleProblems picks the lines of what a page logged that say it
// misbehaved: console messages, uncaught errors, failed loads, refusals.
var consoleRE = regexp.MustCompile(`(?i)CONSOLE|Uncaught|net::ERR_|Failed to load resource|Refused to`)

func consoleProblems(logged []string) []string {
	var out []string
	for _, l := range logged {
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

// screenshot is the page as the browser drew it in a 1400×2000 viewport,
// and what the page logged.
func screenshot(t *testing.T, page string) (image.Image, []string) {
	t.Helper()
	pl := openPage(t, page, 1400, 2000, true)
	return pl.shot, pl.console
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
		pl := openPage(t, page, 1400, 2000, false)
		dom := pl.dom
		if p := consoleProblems(pl.console); len(p) > 0 {
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
		img, logged := screenshot(t, page)
		if p := consoleProblems(logged); len(p) > 0 {
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
		logged := openPage(t, bad, 1400, 2000, false).console
		if len(consoleProblems(logged)) == 0 {
			t.Errorf("a page logging console.error showed no console problem; it logged:\n%s", strings.Join(logged, "\n"))
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
