package score

import (
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/threshold"
)

// DefaultThreshold is the claim of a scenario that names no threshold:
// its published cap.
const DefaultThreshold = "ceiling <= limit"

var defaultThreshold = func() threshold.Threshold {
	th, err := threshold.Parse(DefaultThreshold)
	if err != nil {
		panic(err)
	}
	return th
}()

// Threshold is one threshold's outcome, in report.json's form.
type Threshold struct {
	Expr string `json:"expr"`
	// Status is pass or fail; a threshold that could not be checked (its
	// metric was not measured) is fail with Error set.
	Status string `json:"status"`
	// Observed is the metric side's value, nil when it was not measured.
	Observed *float64 `json:"observed"`
	// Bound is the value the threshold held Observed to, in the metric's
	// own terms: 30 for "ceiling <= 1.5*limit" with a limit of 20. Nil when
	// it could not be computed.
	Bound *float64 `json:"bound,omitempty"`
	Error string   `json:"error,omitempty"`
	// Default marks the claim a scenario without thresholds makes
	// (DefaultThreshold).
	Default bool `json:"default,omitempty"`
	// Unit is "ms" when the threshold reads a latency: the unit of
	// Observed and Bound. It is not part of report.json.
	Unit string `json:"-"`
	// BoundWritten says the bound is written out in Expr ("race_excess >
	// 0", "p99 < 5ms"), so a reader needs only Observed beside it. It is
	// not part of report.json.
	BoundWritten bool `json:"-"`
}

// claimOf is what c's thresholds are: its own, or the default claim when
// a scenario that proves a design holds names none.
func claimOf(c Claim) (ths []threshold.Threshold, byDefault bool) {
	if len(c.Thresholds) == 0 && c.Shows != showsFlaw {
		return []threshold.Threshold{defaultThreshold}, true
	}
	return c.Thresholds, false
}

// Thresholds checks ths against the metrics m of a run with the published
// limit: each with what it observed and the bound it held that to. A
// metric absent from m fails its threshold, never passes it.
func Thresholds(ths []threshold.Threshold, m map[string]float64, limit rate.Limit) []Threshold {
	out := make([]Threshold, 0, len(ths))
	for _, th := range ths {
		observed, pass, err := th.Eval(m, limit)
		t := Threshold{Expr: th.Expr, Status: StatusFail, Unit: th.Unit(), BoundWritten: th.BoundWritten()}
		switch {
		case err != nil:
			t.Error = err.Error()
		default:
			v := observed
			t.Observed = &v
			if pass {
				t.Status = StatusPass
			}
			if b, ok := th.Bound(m, limit); ok {
				t.Bound = &b
			}
		}
		out = append(out, t)
	}
	return out
}
