package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/scenario"
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
			sc.Thresholds = []Threshold{}
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

// Thresholds evaluates a scenario's thresholds against measured metrics,
// in order. A threshold whose metric was not measured fails with its error
// and no observed value: never a silent pass.
func Thresholds(ths []scenario.Threshold, m analysis.Metrics, limit rate.Limit) []Threshold {
	out := make([]Threshold, 0, len(ths))
	for _, th := range ths {
		observed, pass, err := th.Eval(m, limit)
		t := Threshold{Expr: th.Expr, Status: StatusFail}
		switch {
		case err != nil:
			t.Error = err.Error()
		default:
			v := observed
			t.Observed = &v
			if pass {
				t.Status = StatusPass
			}
			if b, ok := bound(th, m, limit); ok {
				t.Bound = &b
			}
		}
		out = append(out, t)
	}
	return out
}

// bound is the value th holds its metric to, in the metric's own terms:
// the other side divided by the metric side's factor, so "ceiling <=
// 1.5*limit" with a limit of 20 gives 30 and "2*ceiling < 30" gives 15. ok
// is false when there is no such value (a metric side scaled by zero or
// less, or another metric that was not measured).
func bound(th scenario.Threshold, m analysis.Metrics, limit rate.Limit) (float64, bool) {
	side, other := th.Left, th.Right
	if !side.IsMetric() {
		side, other = th.Right, th.Left
	}
	if side.Factor <= 0 {
		return 0, false
	}
	v := other.Factor
	switch other.Name {
	case "":
	case scenario.LimitName:
		v *= float64(limit.Count)
	default:
		mv, ok := m[other.Name]
		if !ok {
			return 0, false
		}
		v *= mv
	}
	return v / side.Factor, true
}
