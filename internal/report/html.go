package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/score"
)

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"upper":    upper,
	"num":      num,
	"metric":   metricCell,
	"ceiling":  ceilingCell,
	"ratio":    ratioCell,
	"errors":   errorsCell,
	"observed": observedCell,
	"bound":    boundCell,
	"ordered":  orderedMetrics,
	"anchor":   anchor,
	"rfc3339":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"duration": durationMs,
	"counts": func(sc Scenario) string {
		p, n := thresholdCounts(sc)
		return fmt.Sprintf("%d/%d", p, n)
	},
	"verdictClass": verdictClass,
	"badgeClass":   badgeClass,
	// wbr lets a metric name break after its underscores, so a table of
	// many figures fits the page.
	"wbr": func(s string) template.HTML {
		return template.HTML(strings.ReplaceAll(template.HTMLEscapeString(s), "_", "_<wbr>"))
	},
	"failoverColumns": func() []string { return FailoverColumns },
	"shardLabel":      shardLabel,
}).Parse(htmlSource))

// verdictClass is the CSS class of a verdict: holds, flaw (demonstrated),
// skip (not run) or bad (anything else).
func verdictClass(sc Scenario) string {
	switch sc.Verdict {
	case score.Holds:
		return "holds"
	case score.FlawShown:
		return "flaw"
	case score.NotRun:
		return "skip"
	}
	return "bad"
}

// badgeClass is the CSS class of a scenario's status badge: its status,
// and a flaw demonstrated's PASS in amber, not the green of a design that
// holds.
func badgeClass(sc Scenario) string {
	if sc.Status == score.StatusPass && sc.Flaw() {
		return sc.Status + " flaw"
	}
	return sc.Status
}

type htmlScenario struct {
	Scenario
	Charts []chart
	// Prev and Next are the neighbouring scenarios' anchors, "" at the ends.
	Prev, Next string
	// Faults lists the planned faults in words.
	FaultText string
}

type htmlData struct {
	*Report
	Title     string
	Scenarios []htmlScenario
	// Verdicts counts the verdicts: "9 designs hold, 6 flaws demonstrated".
	Verdicts  string
	Questions []Question
	// Flaws is whether any scenario shows a flaw (the legend is shown).
	Flaws bool
}

// HTML writes report.html: one self-contained page (inline CSS, inline SVG
// charts, no scripts, fonts or images from anywhere). A summary a reviewer
// reads in one screen comes first (verdicts, and the four questions to ask
// of a limiter answered for the run), with a navigation to every
// scenario; then per scenario its verdict, thresholds with the bounds they
// held, notes, charts (faults and unplanned outages shaded on the time
// charts) and every figure.
func HTML(w io.Writer, r *Report) error {
	d := htmlData{Report: r, Title: "rlctl verify report", Verdicts: strings.Join(r.Verdicts, ", "), Questions: Questions(r)}
	if r.Suite != "" {
		d.Title += ": " + r.Suite
	}
	for i, sc := range r.Scenarios {
		hs := htmlScenario{Scenario: sc, Charts: scenarioCharts(sc)}
		if i > 0 {
			hs.Prev = anchor(r.Scenarios[i-1].Name)
		}
		if i+1 < len(r.Scenarios) {
			hs.Next = anchor(r.Scenarios[i+1].Name)
		}
		var faults []string
		for _, f := range sc.Faults {
			faults = append(faults, f.Describe())
		}
		hs.FaultText = strings.Join(faults, "; ")
		d.Flaws = d.Flaws || sc.Flaw()
		d.Scenarios = append(d.Scenarios, hs)
	}
	b := bufio.NewWriter(w)
	if err := htmlTemplate.Execute(b, d); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	return nil
}
