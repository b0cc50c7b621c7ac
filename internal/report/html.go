package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"
)

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"upper":    upper,
	"num":      num,
	"metric":   metric,
	"ceiling":  ceilingCell,
	"ratio":    ratioCell,
	"observed": observedCell,
	"ordered":  orderedMetrics,
	"anchor":   anchor,
	"rfc3339":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"duration": durationMs,
	"counts": func(sc Scenario) string {
		p, n := thresholdCounts(sc)
		return fmt.Sprintf("%d/%d", p, n)
	},
}).Parse(htmlSource))

type htmlScenario struct {
	Scenario
	Charts []chart
}

type htmlData struct {
	*Report
	Title     string
	Scenarios []htmlScenario
}

// HTML writes report.html: one self-contained page (inline CSS, inline SVG
// charts, no scripts, fonts or images from anywhere) with a summary table
// and, per scenario, its metrics, thresholds, notes and charts.
func HTML(w io.Writer, r *Report) error {
	d := htmlData{Report: r, Title: "rlctl verify report"}
	if r.Suite != "" {
		d.Title += ": " + r.Suite
	}
	for _, sc := range r.Scenarios {
		charts, err := scenarioCharts(sc)
		if err != nil {
			return fmt.Errorf("write report.html: scenario %s: %w", sc.Name, err)
		}
		d.Scenarios = append(d.Scenarios, htmlScenario{Scenario: sc, Charts: charts})
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
