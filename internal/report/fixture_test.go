package report

import (
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
)

func f64(v float64) *float64 { return &v }

// fixture is a fixed report with a passing, a failing and an erred
// scenario, with series for the charts, so every writer's output is
// deterministic.
func fixture() *Report {
	var timeline, sliding []analysis.Point
	for i := range 50 {
		at := time.Duration(i) * 100 * time.Millisecond
		timeline = append(timeline, analysis.Point{At: at, Value: float64(2 + i%3)})
		sliding = append(sliding, analysis.Point{At: at, Value: float64(min(i, 20))})
	}
	var pcts []analysis.PercentilePoint
	for _, p := range []float64{0, 25, 50, 75, 90, 99, 99.9, 100} {
		pcts = append(pcts, analysis.PercentilePoint{Percentile: p, Millis: 0.5 + p/20})
	}
	var gws []analysis.GatewayResult
	for i := range 5 {
		gws = append(gws, analysis.GatewayResult{Gateway: "gw-" + string(rune('0'+i)), Allowed: int64(10 + i*3)})
	}
	r := &Report{
		Started:    time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC),
		DurationMs: 12345,
		Suite:      "builtin",
		Scenarios: []Scenario{
			{
				Name:        "lua-fixed-window-holds",
				Description: "One Lua script decides atomically, so the published cap holds under overload.",
				Limit:       Limit{Count: 20, WindowMs: 1000},
				Target:      "simulated redis-fixed-window ×50",
				DurationMs:  5012,
				Metrics: map[string]float64{
					analysis.Requests: 2000, analysis.Allowed: 100, analysis.Denied: 1900,
					analysis.Errors: 0, analysis.Dropped: 0,
					analysis.Ceiling: 20, analysis.CeilingUpper: 20, analysis.CeilingRatio: 1,
					analysis.Burst: 20, analysis.SustainedRate: 19.5, analysis.P50: 0.42, analysis.P99: 1.875,
				},
				Thresholds: []Threshold{
					{Expr: "ceiling <= limit", Status: StatusPass, Observed: f64(20)},
					{Expr: "p99 < 5ms", Status: StatusPass, Observed: f64(1.875)},
				},
				Result: &analysis.Result{
					Timeline: timeline, Interval: 100 * time.Millisecond, Sliding: sliding,
					Percentiles: pcts, PerGateway: gws,
				},
			},
			{
				Name:        "local-counters-leak",
				Description: "Each gateway counts alone: <50 gateways> | 50 × the cap.",
				Limit:       Limit{Count: 20, WindowMs: 1000},
				Target:      "simulated local-fixed-window ×50",
				Metrics: map[string]float64{
					analysis.Requests: 2000, analysis.Allowed: 1000, analysis.Ceiling: 980,
					analysis.CeilingUpper: 1000, analysis.CeilingRatio: 49, analysis.RaceExcess: 3,
				},
				Thresholds: []Threshold{
					{Expr: "ceiling <= limit", Status: StatusFail, Observed: f64(980)},
					{Expr: "ceiling_ratio >= 40", Status: StatusPass, Observed: f64(49)},
					{Expr: "p99 < 5ms", Status: StatusFail, Error: "p99_ms was not measured in this scenario"},
				},
				Notes: []string{"50 gateways each kept their own count: the true ceiling is 50 × 20."},
			},
			{
				Name:   "staging-http",
				Limit:  Limit{Count: 100, WindowMs: 60000},
				Target: "http http://127.0.0.1:1/",
				Status: StatusError,
				Error:  "reach target: connection refused",
				Thresholds: []Threshold{
					{Expr: "ceiling <= limit", Status: StatusFail},
				},
			},
		},
	}
	r.Finish()
	return r
}
