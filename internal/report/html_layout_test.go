//go:build unix

package report

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/metric"
)

// probeScript measures the page as the browser laid it out and writes the
// figures into a <pre id="probe">, which the DOM read after load then
// shows. It is added to a copy of the page for the test only: report.html
// has no scripts.
const probeScript = `<script>
(function () {
  var out = {width: window.innerWidth, height: window.innerHeight, scrollY: window.scrollY};
  var sum = document.getElementById('summary').getBoundingClientRect();
  out.summaryBottom = sum.bottom; out.summaryRight = sum.right; out.summaryHeight = sum.height;
  var q = document.getElementById('questions');
  out.questions = q ? q.querySelectorAll('.question').length : 0;
  out.questionsBottom = q ? q.getBoundingClientRect().bottom : 1e9;
  var nav = document.querySelectorAll('nav.scenarios a[href^="#"]');
  out.navLinks = nav.length; out.navMissing = 0;
  nav.forEach(function (a) { if (!document.getElementById(a.getAttribute('href').slice(1))) out.navMissing++; });
  out.charts = [];
  document.querySelectorAll('figure.chart').forEach(function (fig) {
    var c = {kind: fig.dataset.chart, faults: 0, instants: 0, outages: 0, xTicks: [], yTicks: 0, overlaps: 0,
             limitBeforeMeasured: null, barsBelowTitle: true, bars: 0};
    var svg = fig.querySelector('svg').getBoundingClientRect();
    fig.querySelectorAll('rect.fault').forEach(function (e) { if (e.getBoundingClientRect().width > 0) c.faults++; });
    fig.querySelectorAll('g.instant line').forEach(function (e) { if (e.getBoundingClientRect().height > 0) c.instants++; });
    fig.querySelectorAll('rect.outage').forEach(function (e) { if (e.getBoundingClientRect().width > 0) c.outages++; });
    var prev = null;
    fig.querySelectorAll('.x-axis text.tick-label').forEach(function (e) {
      var b = e.getBoundingClientRect();
      if (b.width > 0 && b.left >= svg.left - 1 && b.right <= svg.right + 1) c.xTicks.push(e.textContent);
      if (prev && b.left < prev.right + 2) c.overlaps++;
      prev = b;
    });
    fig.querySelectorAll('.y-axis text.tick-label').forEach(function (e) { if (e.getBoundingClientRect().width > 0) c.yTicks++; });
    var lim = fig.querySelector('path.limit'), meas = fig.querySelector('path.measured');
    if (lim && meas) c.limitBeforeMeasured = !!(lim.compareDocumentPosition(meas) & Node.DOCUMENT_POSITION_FOLLOWING);
    var title = fig.querySelector('.chart-title').getBoundingClientRect();
    fig.querySelectorAll('rect.bar').forEach(function (e) {
      c.bars++;
      if (e.getBoundingClientRect().top < title.bottom + 8) c.barsBelowTitle = false;
    });
    out.charts.push(c);
  });
  out.failoverOverflow = 0;
  document.querySelectorAll('table.failover').forEach(function (tb) {
    var last = tb.querySelector('tr:first-child th:last-child');
    if (tb.getBoundingClientRect().right > window.innerWidth || (last && last.getBoundingClientRect().right > window.innerWidth)) out.failoverOverflow++;
  });
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

type probeChart struct {
	Kind                string   `json:"kind"`
	Faults              int      `json:"faults"`
	Instants            int      `json:"instants"`
	Outages             int      `json:"outages"`
	XTicks              []string `json:"xTicks"`
	YTicks              int      `json:"yTicks"`
	Overlaps            int      `json:"overlaps"`
	LimitBeforeMeasured *bool    `json:"limitBeforeMeasured"`
	BarsBelowTitle      bool     `json:"barsBelowTitle"`
	Bars                int      `json:"bars"`
}

type probe struct {
	Width, Height   float64
	ScrollY         float64 `json:"scrollY"`
	SummaryBottom   float64 `json:"summaryBottom"`
	SummaryRight    float64 `json:"summaryRight"`
	Questions       int     `json:"questions"`
	QuestionsBottom float64 `json:"questionsBottom"`
	NavLinks        int     `json:"navLinks"`
	NavMissing      int     `json:"navMissing"`
	// FailoverOverflow counts the failover tables wider than the window.
	FailoverOverflow int `json:"failoverOverflow"`
	Charts           []probeChart
}

// measure opens report.html for r with the probe added, in a viewport of
// the given size, and returns what the browser laid out.
func measure(t *testing.T, r *Report, width, height int) probe {
	t.Helper()
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script") {
		t.Fatal("report.html has a script of its own")
	}
	page := filepath.Join(t.TempDir(), "report.html")
	probed := strings.Replace(buf.String(), "</body>", probeScript+"</body>", 1)
	if err := os.WriteFile(page, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}
	pl := openPage(t, page, width, height, false)
	m := regexp.MustCompile(`<pre id="probe">(.*?)</pre>`).FindStringSubmatch(pl.dom)
	if m == nil {
		t.Fatalf("the probe did not run; the page logged:\n%s", strings.Join(pl.console, "\n"))
	}
	var p probe
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &p); err != nil {
		t.Fatalf("probe output %q: %v", m[1], err)
	}
	if p.Width != float64(width) {
		t.Fatalf("the page was laid out %v wide, want %d", p.Width, width)
	}
	return p
}

// TestHTMLSummaryInOneScreen opens the built-in suite's report.html 1400 px
// wide in headless Chromium: the summary (verdicts and the four questions)
// fits in the first 780 px, the browser's viewport on a 1440×900 laptop, and the
// navigation reaches every scenario.
func TestHTMLSummaryInOneScreen(t *testing.T) {
	t.Parallel()
	r := suiteReport(t)
	// The viewport is taller than the screen measured against: the layout
	// depends on the width only.
	const screen = 780
	p := measure(t, r, 1400, 1200)
	t.Logf("summary ends at %v, the questions at %v", p.SummaryBottom, p.QuestionsBottom)
	if p.ScrollY != 0 || p.SummaryBottom > screen || p.SummaryRight > p.Width {
		t.Errorf("the summary ends at %v×%v on a 1400-px-wide page (scrolled %v): it does not fit a %d-px-high screen", p.SummaryRight, p.SummaryBottom, p.ScrollY, screen)
	}
	if p.Questions != 4 || p.QuestionsBottom > screen {
		t.Errorf("%d questions answered, ending at %v: want all four on the first screen", p.Questions, p.QuestionsBottom)
	}
	if p.NavLinks != len(r.Scenarios)+1 || p.NavMissing != 0 {
		t.Errorf("navigation has %d links (%d to nothing), want one per scenario and the summary (%d)", p.NavLinks, p.NavMissing, len(r.Scenarios)+1)
	}
}

// A failover table fits a 1400-px-wide page, its last column
// (recover_ms) too.
func TestHTMLFailoverTableFits(t *testing.T) {
	t.Parallel()
	r := failoverReport()
	r.Scenarios[0].Failover.Endpoints[0].Metrics[metric.RecoverMs] = 1234.5
	if p := measure(t, r, 1400, 1000); p.FailoverOverflow != 0 {
		t.Errorf("%d failover tables run past a 1400-px-wide page", p.FailoverOverflow)
	}
}

// TestHTMLChartsInBrowser checks the charts as the browser drew them: every
// time chart shades the fault span, marks the instant fault and the
// unplanned outage, labels its time axis in whole seconds or simple
// fractions without overlap, draws the measured line over the limit line,
// and the bars stay clear of the chart's title.
func TestHTMLChartsInBrowser(t *testing.T) {
	t.Parallel()
	r := fixture()
	r.Scenarios = r.Scenarios[:1]
	// A run of 12.5 s: the old axis showed "0.00" and "2.50"-like ticks.
	res := *r.Scenarios[0].Result
	res.Timeline, res.Sliding = nil, nil
	for i := range 125 {
		at := time.Duration(i) * 100 * time.Millisecond
		res.Timeline = append(res.Timeline, analysis.Point{At: at, Value: 2})
		res.Sliding = append(res.Sliding, analysis.Point{At: at, Value: 20})
	}
	r.Scenarios[0].Result = &res
	r.Scenarios[0].DurationMs = 12500
	p := measure(t, r, 1400, 2400)
	secondsRE := regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]{1,2})?s$`)
	seen := map[string]bool{}
	for _, c := range p.Charts {
		seen[c.Kind] = true
		switch c.Kind {
		case ChartTimeline, ChartSliding:
			if c.Faults != 1 || c.Instants != 1 || c.Outages != 1 {
				t.Errorf("%s: %d fault spans, %d instant faults, %d outages drawn; want 1 each", c.Kind, c.Faults, c.Instants, c.Outages)
			}
			if len(c.XTicks) < 4 || len(c.XTicks) > 10 || c.Overlaps > 0 {
				t.Errorf("%s: time axis labels %q (%d overlapping); want 4 to 10 readable ones", c.Kind, c.XTicks, c.Overlaps)
			}
			for _, l := range c.XTicks {
				if !secondsRE.MatchString(l) {
					t.Errorf("%s: time axis label %q is not in seconds", c.Kind, l)
				}
			}
			if c.LimitBeforeMeasured == nil || !*c.LimitBeforeMeasured {
				t.Errorf("%s: the measured line is not drawn above the limit line", c.Kind)
			}
		case ChartGateways:
			if c.Bars == 0 || !c.BarsBelowTitle {
				t.Errorf("gateway bars (%d) touch the chart's title", c.Bars)
			}
		}
		if c.YTicks < 3 {
			t.Errorf("%s: %d y axis labels", c.Kind, c.YTicks)
		}
	}
	for _, k := range []string{ChartTimeline, ChartSliding, ChartLatency, ChartGateways} {
		if !seen[k] {
			t.Errorf("no %s chart in the page", k)
		}
	}
}
