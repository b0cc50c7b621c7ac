package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/rlctl/rlctl/internal/score"
)

// JSON writes r as report.json: indented, metrics keyed by analysis names,
// absent metrics absent, started in UTC. Non-finite values (which JSON
// cannot carry) are left out rather than failing the whole report.
func JSON(w io.Writer, r *Report) error {
	c := *r
	c.Schema = Schema
	c.Started = r.Started.UTC()
	c.Scenarios = make([]Scenario, len(r.Scenarios))
	for i, sc := range r.Scenarios {
		sc.Metrics = finiteMetrics(sc.Metrics)
		sc.Thresholds = slices.Clone(sc.Thresholds)
		if sc.Thresholds == nil {
			sc.Thresholds = []score.Threshold{}
		}
		for j, t := range sc.Thresholds {
			if t.Observed != nil && !finite(*t.Observed) {
				sc.Thresholds[j].Observed = nil
			}
			if t.Bound != nil && !finite(*t.Bound) {
				sc.Thresholds[j].Bound = nil
			}
		}
		c.Scenarios[i] = sc
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return fmt.Errorf("write report.json: %w", err)
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func finiteMetrics(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		if finite(v) {
			out[k] = v
		}
	}
	return out
}
