package report

import (
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/threshold"
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
					metric.Requests: 2000, metric.Allowed: 100, metric.Denied: 1900,
					metric.Errors: 0, metric.Dropped: 0,
					metric.Ceiling: 20, metric.CeilingUpper: 20, metric.CeilingRatio: 1,
					metric.Burst: 20, metric.SustainedRate: 19.5, metric.FailOpen: 12, metric.FailClosed: 3,
					metric.AfterFaultCeiling: 20, metric.P50: 0.42, metric.P99: 1.875,
				},
				Thresholds: []score.Threshold{
					{Expr: "ceiling <= limit", Status: score.StatusPass, Observed: f64(20), Bound: f64(20)},
					{Expr: "p99 < 5ms", Status: score.StatusPass, Observed: f64(1.875), Bound: f64(5)},
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
					metric.Requests: 2000, metric.Allowed: 1000, metric.Ceiling: 980,
					metric.CeilingUpper: 1000, metric.CeilingRatio: 49, metric.RaceExcess: 3,
				},
				Thresholds: []score.Threshold{
					{Expr: "ceiling <= limit", Status: score.StatusFail, Observed: f64(980), Bound: f64(20)},
					{Expr: "ceiling_ratio >= 40", Status: score.StatusPass, Observed: f64(49), Bound: f64(40)},
					{Expr: "p99 < 5ms", Status: score.StatusFail, Error: "p99_ms was not measured in this scenario"},
				},
				Notes: []string{"50 gateways each kept their own count: the true ceiling is 50 × 20."},
			},
			{
				Name:   "staging-http",
				Shows:  "holds",
				Limit:  Limit{Count: 100, WindowMs: 60000},
				Target: "http http://127.0.0.1:1/",
				Design: &Design{Kind: "http", Gateways: 1},
				Status: score.StatusError,
				Error:  "reach target: connection refused",
				Thresholds: []score.Threshold{
					{Expr: "ceiling <= limit", Status: score.StatusFail},
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
					metric.Requests: 1000, metric.Allowed: 300, metric.Errors: 0,
					metric.Ceiling: 27, metric.CeilingUpper: 27, metric.CeilingRatio: 1.35, metric.RaceExcess: 140,
				},
				Thresholds: []score.Threshold{
					{Expr: "race_excess > 0", Status: score.StatusPass, Observed: f64(140), Bound: f64(0)},
					{Expr: "ceiling <= 1.5*limit", Status: score.StatusPass, Observed: f64(27), Bound: f64(30)},
				},
			},
			{
				Name:   "clock-skew-gateway-clocks",
				Shows:  "flaw",
				Limit:  Limit{Count: 20, WindowMs: 1000},
				Target: "simulated redis-token-bucket ×4, clock gateway, skew ±300ms",
				Design: &Design{Kind: "simulated", Algorithm: "redis-token-bucket", Gateways: 4, Clock: "gateway", ClockSkewMs: 300},
				Metrics: map[string]float64{
					metric.Requests: 400, metric.Allowed: 380, metric.Errors: 0, metric.Ceiling: 101,
					metric.CeilingRatio: 5.05, metric.Burst: 1.4034, metric.SustainedRate: 100, metric.Slipped: 301,
				},
				Thresholds: []score.Threshold{
					{Expr: "sustained_rate > 2*limit", Status: score.StatusPass, Observed: f64(100), Bound: f64(40)},
					{Expr: "slipped > 0", Status: score.StatusPass, Observed: f64(301), Bound: f64(0)},
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
					metric.Requests: 400, metric.Allowed: 45, metric.Errors: 1, metric.Ceiling: 20, metric.CeilingRatio: 1,
				},
				Thresholds: []score.Threshold{
					{Expr: "allowed <= limit", Status: score.StatusFail, Observed: f64(45), Bound: f64(20)},
				},
			},
		},
	}
	for i := range r.Scenarios {
		for j := range r.Scenarios[i].Thresholds {
			t := &r.Scenarios[i].Thresholds[j]
			th, err := threshold.Parse(t.Expr)
			if err != nil {
				panic(err)
			}
			// What Thresholds takes from the parsed form.
			t.Unit, t.BoundWritten = th.Unit(), th.BoundWritten()
		}
	}
	settle(r, false)
	return r
}

// settle decides the statuses a hand-made report leaves open as score
// would from its thresholds (pass when all passed, error when it names
// one), and the run's, so the writers get what verify gives them.
func settle(r *Report, interrupted bool) {
	var vs []score.Verdict
	for i := range r.Scenarios {
		sc := &r.Scenarios[i]
		if sc.Status == "" {
			sc.Status = score.StatusPass
			for _, t := range sc.Thresholds {
				if t.Status != score.StatusPass {
					sc.Status = score.StatusFail
				}
			}
			if sc.Error != "" {
				sc.Status = score.StatusError
			}
		}
		sc.Verdict = score.Words(sc.Shows, sc.Status)
		vs = append(vs, score.Verdict{Status: sc.Status, Words: sc.Verdict})
	}
	s := score.Suite(vs, interrupted)
	r.Schema, r.Status, r.Verdicts, r.Reason = Schema, s.Status, s.Counts, s.Reason
}
