package report

import (
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
)

func f64(v float64) *float64 { return &v }

// fixture is a fixed report with every kind of outcome: a design that
// holds (with series for the charts, faults and an outage), one that does
// not, an erred scenario, two flaws demonstrated and one flaw not
// demonstrated, so every writer's output is deterministic.
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
				Shows:       "holds",
				Description: "One Lua script decides atomically, so the published cap holds under overload.",
				Limit:       Limit{Count: 20, WindowMs: 1000},
				Target:      "simulated redis-fixed-window ×50",
				Design: &Design{Kind: "simulated", Algorithm: "redis-fixed-window", Gateways: 50, Clock: "redis",
					Endpoints: []Endpoint{{Name: "login", OnError: "closed", OnFailover: "deny"}, {Name: "feed", OnError: "open", OnFailover: "trust"}}},
				DurationMs: 5012,
				Faults:     []Fault{{Action: "redis-latency", FromMs: 1000, ForMs: 1000}, {Action: "failover", FromMs: 3000}},
				Outages:    []Outage{{FromMs: 3000, ToMs: 3250, FailOpen: 12, FailClosed: 3}},
				Metrics: map[string]float64{
					analysis.Requests: 2000, analysis.Allowed: 100, analysis.Denied: 1900,
					analysis.Errors: 0, analysis.Dropped: 0,
					analysis.Ceiling: 20, analysis.CeilingUpper: 20, analysis.CeilingRatio: 1,
					analysis.Burst: 20, analysis.SustainedRate: 19.5, analysis.FailOpen: 12, analysis.FailClosed: 3,
					analysis.AfterFaultCeiling: 20, analysis.P50: 0.42, analysis.P99: 1.875,
				},
				Thresholds: []Threshold{
					{Expr: "ceiling <= limit", Status: StatusPass, Observed: f64(20), Bound: f64(20)},
					{Expr: "p99 < 5ms", Status: StatusPass, Observed: f64(1.875), Bound: f64(5)},
				},
				Result: &analysis.Result{
					Timeline: timeline, Interval: 100 * time.Millisecond, Sliding: sliding,
					Percentiles: pcts, PerGateway: gws,
				},
			},
			{
				Name:        "local-counters",
				Shows:       "holds",
				Description: "Each gateway counts alone: <50 gateways> | 50 × the cap.",
				Limit:       Limit{Count: 20, WindowMs: 1000},
				Target:      "simulated local-fixed-window ×50",
				Design:      &Design{Kind: "simulated", Algorithm: "local-fixed-window", Gateways: 50, Clock: "gateway"},
				Metrics: map[string]float64{
					analysis.Requests: 2000, analysis.Allowed: 1000, analysis.Ceiling: 980,
					analysis.CeilingUpper: 1000, analysis.CeilingRatio: 49, analysis.RaceExcess: 3,
				},
				Thresholds: []Threshold{
					{Expr: "ceiling <= limit", Status: StatusFail, Observed: f64(980), Bound: f64(20)},
					{Expr: "ceiling_ratio >= 40", Status: StatusPass, Observed: f64(49), Bound: f64(40)},
					{Expr: "p99 < 5ms", Status: StatusFail, Error: "p99_ms was not measured in this scenario"},
				},
				Notes: []string{"50 gateways each kept their own count: the true ceiling is 50 × 20."},
			},
			{
				Name:   "staging-http",
				Shows:  "holds",
				Limit:  Limit{Count: 100, WindowMs: 60000},
				Target: "http http://127.0.0.1:1/",
				Design: &Design{Kind: "http", Gateways: 1},
				Status: StatusError,
				Error:  "reach target: connection refused",
				Thresholds: []Threshold{
					{Expr: "ceiling <= limit", Status: StatusFail},
				},
			},
			{
				Name:        "get-incr-race",
				Shows:       "flaw",
				Description: "GET, compare, then INCR in three round trips: two gateways both read 19 and both admit.",
				Limit:       Limit{Count: 20, WindowMs: 1000},
				Target:      "simulated redis-get-incr ×10",
				Design:      &Design{Kind: "simulated", Algorithm: "redis-get-incr", Gateways: 10, Clock: "redis"},
				Metrics: map[string]float64{
					analysis.Requests: 1000, analysis.Allowed: 300, analysis.Errors: 0,
					analysis.Ceiling: 27, analysis.CeilingUpper: 27, analysis.CeilingRatio: 1.35, analysis.RaceExcess: 140,
				},
				Thresholds: []Threshold{
					{Expr: "race_excess > 0", Status: StatusPass, Observed: f64(140), Bound: f64(0)},
					{Expr: "ceiling <= 1.5*limit", Status: StatusPass, Observed: f64(27), Bound: f64(30)},
				},
			},
			{
				Name:   "clock-skew-gateway-clocks",
				Shows:  "flaw",
				Limit:  Limit{Count: 20, WindowMs: 1000},
				Target: "simulated redis-token-bucket ×4, clock gateway, skew ±300ms",
				Design: &Design{Kind: "simulated", Algorithm: "redis-token-bucket", Gateways: 4, Clock: "gateway", ClockSkewMs: 300},
				Metrics: map[string]float64{
					analysis.Requests: 400, analysis.Allowed: 380, analysis.Errors: 0, analysis.Ceiling: 101,
					analysis.CeilingRatio: 5.05, analysis.Burst: 1.4034, analysis.SustainedRate: 100, analysis.Slipped: 301,
				},
				Thresholds: []Threshold{
					{Expr: "sustained_rate > 2*limit", Status: StatusPass, Observed: f64(100), Bound: f64(40)},
					{Expr: "slipped > 0", Status: StatusPass, Observed: f64(301), Bound: f64(0)},
				},
			},
			{
				Name:        "ttl-refresh-lockout",
				Shows:       "flaw",
				Description: "The expiry is refreshed on every request, so a busy caller stays locked out.",
				Limit:       Limit{Count: 20, WindowMs: 1000},
				Target:      "simulated redis-fixed-window-refresh ×4",
				Design:      &Design{Kind: "simulated", Algorithm: "redis-fixed-window-refresh", Gateways: 4, Clock: "redis"},
				Metrics: map[string]float64{
					analysis.Requests: 400, analysis.Allowed: 45, analysis.Errors: 1, analysis.Ceiling: 20, analysis.CeilingRatio: 1,
				},
				Thresholds: []Threshold{
					{Expr: "allowed <= limit", Status: StatusFail, Observed: f64(45), Bound: f64(20)},
				},
			},
		},
	}
	r.Finish()
	return r
}
