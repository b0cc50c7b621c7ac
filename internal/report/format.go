package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/textfmt"
)

// keyMetrics are the figures the summary tables show, when measured.
var keyMetrics = []string{
	metric.Burst, metric.RaceExcess, metric.BoundaryAllowed, metric.P99,
}

// num prints a figure as every report and note does (textfmt.Num).
func num(v float64) string { return textfmt.Num(v) }

// metricCell prints a scenario's metric, "–" when it was not measured, with a
// unit for latencies.
func metricCell(m map[string]float64, name string) string {
	v, ok := m[name]
	if !ok {
		return "–"
	}
	if strings.HasSuffix(name, "_ms") {
		return num(v) + "ms"
	}
	return num(v)
}

// ceilingCell is "ceiling (..upper)" or just the ceiling when the bounds meet.
func ceilingCell(m map[string]float64) string {
	c, ok := m[metric.Ceiling]
	if !ok {
		return "–"
	}
	u, ok := m[metric.CeilingUpper]
	if !ok || u == c {
		return num(c)
	}
	return num(c) + "–" + num(u)
}

// errorsCell is the requests that got no deciding answer, with their share
// of those sent: "12 (0.4%)".
func errorsCell(m map[string]float64) string {
	e, ok := m[metric.Errors]
	if !ok {
		return "–"
	}
	if sent := m[metric.Requests] - m[metric.Dropped]; e > 0 && sent > 0 {
		return fmt.Sprintf("%s (%s)", num(e), textfmt.Percent(e/sent))
	}
	return num(e)
}

func ratioCell(m map[string]float64) string {
	v, ok := m[metric.CeilingRatio]
	if !ok {
		return "–"
	}
	return textfmt.Ratio(v)
}

// observedCell prints a threshold's observed value, with "ms" when the
// metric it reads is a latency, so "p99 < 5ms" shows "observed 1.9ms".
func observedCell(t score.Threshold) string {
	if t.Observed == nil {
		return "–"
	}
	return num(*t.Observed) + t.Unit
}

// boundCell prints the value a threshold held its metric to, "" when
// unknown.
func boundCell(t score.Threshold) string {
	if t.Bound == nil {
		return ""
	}
	return num(*t.Bound) + t.Unit
}

// figures is "observed 78, bound 30": what a threshold saw and what it
// held that to.
func figures(t score.Threshold) string {
	s := "observed " + observedCell(t)
	if b := boundCell(t); b != "" {
		s += ", bound " + b
	}
	return s
}

func thresholdCounts(sc Scenario) (pass, total int) {
	for _, t := range sc.Thresholds {
		if t.Status == score.StatusPass {
			pass++
		}
	}
	return pass, len(sc.Thresholds)
}

func upper(s string) string { return strings.ToUpper(s) }

func durationMs(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// orderedMetrics lists the metrics present in m: analysis names in their
// order first, then any others sorted, so new metrics still show.
func orderedMetrics(m map[string]float64) []string {
	var out []string
	known := map[string]bool{}
	for _, n := range metric.Names {
		known[n] = true
		if _, ok := m[n]; ok {
			out = append(out, n)
		}
	}
	var extra []string
	for n := range m {
		if !known[n] {
			extra = append(extra, n)
		}
	}
	sortStrings(extra)
	return append(out, extra...)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// count is "1 scenario", "3 scenarios".
func count(n int, noun string) string { return textfmt.Count(n, noun) }
