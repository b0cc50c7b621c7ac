package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// rec is a record decided at a known instant with a small round trip.
func rec(at time.Duration, id uint32, gw uint16, o decision.Outcome) history.Record {
	return history.Record{
		Intended: at, Sent: at, Received: at + 100*time.Microsecond, Decided: at,
		RetryAfter: history.NoTime, Identity: id, Round: history.NoRound, Gateway: gw, Outcome: o, By: decision.ByRedis,
	}
}

func outcome(ok bool) decision.Outcome {
	if ok {
		return decision.Allowed
	}
	return decision.Denied
}

func TestTokenBucketEnvelope(t *testing.T) {
	t.Parallel()
	const capacity, refill = 10.0, 20.0 // tokens, per second
	// A bucket of capacity L refilled at L per W: L = 10, W = 500ms.
	h := history.New(history.Meta{Limit: rate.Limit{Count: 10, Window: 500 * time.Millisecond}, Identities: []string{"u"}}, 0)
	tokens, last := capacity, time.Duration(0)
	for at := time.Duration(0); at < 10*time.Second; at += 5 * time.Millisecond { // 200/s: overload
		tokens = min(capacity, tokens+refill*(at-last).Seconds())
		last = at
		ok := tokens >= 1
		if ok {
			tokens--
		}
		h.Append(rec(at, 0, 0, outcome(ok)))
	}
	m := analyzed(t, h, Options{}).Metrics
	if b := m[metric.Burst]; math.Abs(b-capacity) > 1 {
		t.Errorf("burst = %v, want about the capacity %v", b, capacity)
	}
	if r := m[metric.SustainedRate]; math.Abs(r-refill)/refill > 0.05 {
		t.Errorf("sustained_rate = %v, want about the refill %v/s", r, refill)
	}
	// The bucket's envelope allows more than L in one sliding window (up
	// to 2L-1); a correct bucket slips nothing against its own envelope.
	if c := m[metric.Ceiling]; c <= 10 || c > 19 {
		t.Errorf("ceiling = %v, want in (L, 2L-1] = (10, 19]", c)
	}
	if s := m[metric.Slipped]; s != 0 {
		t.Errorf("slipped = %v against the bucket's own envelope, want 0", s)
	}
}

func TestIndependentLocalCounters(t *testing.T) {
	t.Parallel()
	const gateways, limit = 5, 10
	h := history.New(history.Meta{Limit: rate.Limit{Count: limit, Window: time.Second}, Identities: []string{"u"}}, 0)
	used := map[[2]int64]int{} // (gateway, window) → count
	i := 0
	for at := time.Duration(0); at < 5*time.Second; at += time.Millisecond {
		gw := i % gateways
		i++
		key := [2]int64{int64(gw), int64(at / time.Second)}
		ok := used[key] < limit
		if ok {
			used[key]++
		}
		h.Append(rec(at, 0, uint16(gw), outcome(ok)))
	}
	m := analyzed(t, h, Options{}).Metrics
	if m[metric.CeilingRatio] != gateways {
		t.Errorf("ceiling_ratio = %v, want %d (one full quota per gateway)", m[metric.CeilingRatio], gateways)
	}
	if m[metric.Ceiling] != m[metric.CeilingUpper] {
		t.Errorf("ceiling bounds [%v, %v] differ although every decision time is known", m[metric.Ceiling], m[metric.CeilingUpper])
	}
	if m[metric.Slipped] < (gateways-1)*limit*4 {
		t.Errorf("slipped = %v, want at least %d", m[metric.Slipped], (gateways-1)*limit*4)
	}
}

func TestFixedWindowBoundaryBurst(t *testing.T) {
	t.Parallel()
	const limit = 10
	h := history.New(history.Meta{
		Limit: rate.Limit{Count: limit, Window: time.Second}, Identities: []string{"u"},
		Boundaries: []time.Duration{time.Second}, BoundarySpan: 50 * time.Millisecond,
	}, 0)
	counts := map[time.Duration]int{}
	for _, at := range []time.Duration{958 * time.Millisecond, 1000 * time.Millisecond} {
		for k := range 2 * limit {
			at := at + time.Duration(2*k)*time.Millisecond
			win := at / time.Second
			ok := counts[win] < limit
			if ok {
				counts[win]++
			}
			r := rec(at, 0, 0, outcome(ok))
			r.Decided = history.NoTime // only [Sent, Received] known
			h.Append(r)
		}
	}
	m := analyzed(t, h, Options{}).Metrics
	if m[metric.BoundaryAllowed] != 2*limit {
		t.Errorf("boundary_allowed = %v, want 2L = %d", m[metric.BoundaryAllowed], 2*limit)
	}
	if m[metric.Ceiling] != 2*limit {
		t.Errorf("ceiling = %v, want 2L = %d", m[metric.Ceiling], 2*limit)
	}
}

func TestRaceExcess(t *testing.T) {
	t.Parallel()
	h := history.New(history.Meta{Limit: rate.Limit{Count: 1, Window: time.Second}, Identities: []string{"a", "b"}, Rounds: 3}, 0)
	// Round r: identity a gets r+1 allowed of 4 tries; b gets exactly one.
	for round := range 3 {
		for g := range 4 {
			r := rec(time.Duration(round)*time.Second, 0, uint16(g), outcome(g <= round))
			r.Round = int32(round)
			h.Append(r)
			r = rec(time.Duration(round)*time.Second, 1, uint16(g), outcome(g == 0))
			r.Round = int32(round)
			h.Append(r)
		}
	}
	res := analyzed(t, h, Options{})
	if got := res.PerIdentity[0].Metrics[metric.RaceExcess]; got != 0+1+2 {
		t.Errorf("identity a race_excess = %v, want 3", got)
	}
	if got := res.PerIdentity[1].Metrics[metric.RaceExcess]; got != 0 {
		t.Errorf("identity b race_excess = %v, want 0", got)
	}
	if got := res.Metrics[metric.RaceExcess]; got != 3 {
		t.Errorf("race_excess = %v, want 3", got)
	}
}

func TestFaultFigures(t *testing.T) {
	t.Parallel()
	meta := history.Meta{
		Limit: rate.Limit{Count: 5, Window: 100 * time.Millisecond}, Identities: []string{"u"},
		Faults: []history.Fault{{At: 300 * time.Millisecond, Action: "failover"}, {At: time.Second, For: time.Second, Action: "redis-down"}},
	}
	h := history.New(meta, 0)
	// Before: 5 per window, as the limit says.
	for at := time.Duration(0); at < 200*time.Millisecond; at += 20 * time.Millisecond {
		h.Append(rec(at, 0, 0, decision.Allowed))
	}
	// During the outage: fail open, 12 in the first 100ms, and fail closed.
	for k := range 12 {
		r := rec(time.Second+time.Duration(k)*5*time.Millisecond, 0, 0, decision.Allowed)
		r.By = decision.ByFailOpen
		h.Append(r)
	}
	for k := range 3 {
		r := rec(1500*time.Millisecond+time.Duration(k)*time.Millisecond, 0, 0, decision.Denied)
		r.By = decision.ByFailClosed
		h.Append(r)
	}
	// Sent before the end, answered by Redis after: not a recovery.
	straddle := rec(1999*time.Millisecond, 0, 0, decision.Allowed)
	straddle.Decided, straddle.Received = history.NoTime, 2005*time.Millisecond
	h.Append(straddle)
	// A fallback decision after the end: not Redis.
	fb := rec(2001*time.Millisecond, 0, 0, decision.Denied)
	fb.By = decision.ByFallback
	h.Append(fb)
	first := rec(2010*time.Millisecond, 0, 0, decision.Denied)
	first.Decided, first.Received = history.NoTime, 2012*time.Millisecond
	h.Append(first)

	m := analyzed(t, h, Options{}).Metrics
	want := Metrics{metric.FailOpen: 12, metric.FailClosed: 3, metric.AfterFaultCeiling: 12, metric.RecoverMs: 12}
	for name, v := range want {
		if got, ok := m[name]; !ok || math.Abs(got-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, v)
		}
	}
}

func TestRecoverAbsentWhenRedisNeverAnswers(t *testing.T) {
	t.Parallel()
	h := history.New(history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"u"},
		Faults: []history.Fault{{At: time.Second, For: time.Second, Action: "redis-down"}}}, 0)
	r := rec(3*time.Second, 0, 0, decision.Error)
	h.Append(r)
	m := analyzed(t, h, Options{}).Metrics
	if _, ok := m[metric.RecoverMs]; ok {
		t.Errorf("recover_ms = %v, want absent", m[metric.RecoverMs])
	}
	if m[metric.FailOpen] != 0 || m[metric.FailClosed] != 0 {
		t.Errorf("fail_open/fail_closed = %v/%v, want present and 0", m[metric.FailOpen], m[metric.FailClosed])
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	h := history.New(history.Meta{Limit: rate.Limit{Count: 1000, Window: time.Second}, Identities: []string{"u"}, Gateways: []string{"g0", "g1"}}, 0)
	for k := 1; k <= 100; k++ {
		at := time.Duration(k) * time.Second
		r := rec(at, 0, uint16((k-1)/50), decision.Allowed)
		// queueing counts: latency is from Intended; sending k×10µs late
		// is rlctl's own lag
		r.Sent = at + time.Duration(k)*10*time.Microsecond
		r.Received = at + time.Duration(k)*time.Millisecond
		r.Decided = history.NoTime
		h.Append(r)
	}
	drop := rec(0, 0, 0, decision.Dropped)
	drop.Received = time.Hour // never ran: must not count
	h.Append(drop)

	res := analyzed(t, h, Options{})
	want := Metrics{metric.P50: 50, metric.P90: 90, metric.P99: 99, metric.P999: 100, metric.Max: 100, metric.SendLagP99: 0.99}
	for name, v := range want {
		if got := res.Metrics[name]; math.Abs(got-v)/v > 0.001 {
			t.Errorf("%s = %v, want %v within 0.1%%", name, got, v)
		}
	}
	// Counted from when each request really left: k ms less k×10µs.
	for name, v := range map[string]float64{metric.P50: 49.5, metric.P99: 98.01, metric.Max: 99} {
		if got := res.Conduct.FromSent[name]; math.Abs(got-v)/v > 0.001 {
			t.Errorf("%s from sent = %v, want %v within 0.1%%", name, got, v)
		}
	}
	if g := res.PerGateway[0]; math.Abs(g.MaxMillis-50) > 0.05 || g.Requests != 51 || g.Dropped != 1 {
		t.Errorf("gateway g0 = %+v, want max 50ms, 51 requests, 1 dropped", g)
	}
	if len(res.Percentiles) != curvePoints || res.Percentiles[0].Percentile != 0 || res.Percentiles[curvePoints-1].Percentile != 99.99 {
		t.Errorf("percentile curve = %v, want %d points from 0 to 99.99", res.Percentiles, curvePoints)
	}
}

func TestAbsentFigures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		h       *history.History
		absent  []string
		present []string
	}{
		{
			name:    "empty run",
			h:       history.New(history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}}, 0),
			absent:  []string{metric.P50, metric.Max, metric.RetryAfterMissing, metric.BoundaryAllowed, metric.RaceExcess, metric.FailOpen, metric.AfterFaultCeiling, metric.RecoverMs},
			present: []string{metric.Requests, metric.Allowed, metric.Denied, metric.Errors, metric.Dropped, metric.Ceiling},
		},
		{
			name: "plain run",
			h: func() *history.History {
				h := history.New(history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"u"}}, 0)
				h.Append(rec(0, 0, 0, decision.Allowed))
				return h
			}(),
			// One request: no window after the first, so no long-run
			// rate or burst.
			absent:  []string{metric.RetryAfterMissing, metric.BoundaryAllowed, metric.RaceExcess, metric.FailOpen, metric.FailClosed, metric.AfterFaultCeiling, metric.RecoverMs, metric.Burst, metric.SustainedRate},
			present: []string{metric.Requests, metric.Ceiling, metric.CeilingUpper, metric.CeilingRatio, metric.Slipped, metric.P50, metric.P90, metric.P99, metric.P999, metric.Max},
		},
		{
			name: "a run of two windows",
			h: func() *history.History {
				h := history.New(history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"u"}}, 0)
				h.Append(rec(0, 0, 0, decision.Allowed))
				h.Append(rec(2*time.Second, 0, 0, decision.Allowed))
				return h
			}(),
			present: []string{metric.Burst, metric.SustainedRate},
		},
		{
			name: "no limit",
			h: func() *history.History {
				h := history.New(history.Meta{Identities: []string{"u"}}, 0)
				h.Append(rec(0, 0, 0, decision.Allowed))
				return h
			}(),
			absent:  []string{metric.Ceiling, metric.CeilingRatio, metric.Burst, metric.Slipped},
			present: []string{metric.Requests, metric.Allowed, metric.P50},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := analyzed(t, tt.h, Options{}).Metrics
			for _, name := range tt.absent {
				if v, ok := m[name]; ok {
					t.Errorf("%s = %v, want absent", name, v)
				}
			}
			for _, name := range tt.present {
				if _, ok := m[name]; !ok {
					t.Errorf("%s absent, want present", name)
				}
			}
		})
	}
}

func TestSeries(t *testing.T) {
	t.Parallel()
	h := history.New(history.Meta{Limit: rate.Limit{Count: 3, Window: time.Second}, Identities: []string{"a", "b"}}, 0)
	// a: 1 per 100ms for 10s; b: 6 in a burst at 5s (the worst identity).
	for at := time.Duration(0); at < 10*time.Second; at += 100 * time.Millisecond {
		h.Append(rec(at, 0, 0, decision.Allowed))
	}
	for k := range 6 {
		h.Append(rec(5*time.Second+time.Duration(k)*time.Millisecond, 1, 0, decision.Allowed))
	}
	res := analyzed(t, h, Options{})
	if res.Interval != 100*time.Millisecond {
		t.Fatalf("Interval = %v, want 100ms for a 10s run", res.Interval)
	}
	var total, peak float64
	for _, p := range res.Timeline {
		total += p.Value
	}
	if total != 106 {
		t.Errorf("timeline sums to %v, want every allowed request (106)", total)
	}
	for _, p := range res.Sliding {
		peak = max(peak, p.Value)
	}
	if peak != 10 { // worst identity by ceiling is a (10 per window), not b (6)
		t.Errorf("sliding peak = %v, want 10", peak)
	}
	res = analyzed(t, h, Options{Interval: time.Second})
	if len(res.Timeline) != 10 || res.Timeline[5].Value != 16 {
		t.Errorf("1s timeline = %v, want 10 points with 16 at 5s", res.Timeline)
	}
}

// TestMergeAnalysisEqualsWhole: histories of one run recorded on two
// machines, merged, analyse like the run recorded on one.
func TestMergeAnalysisEqualsWhole(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 5))
	meta := history.Meta{Scenario: "m", Start: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Limit: rate.Limit{Count: 20, Window: 200 * time.Millisecond}, Identities: []string{"a", "b", "c"}, Gateways: []string{"g0", "g1", "g2", "g3"}}
	whole := history.New(meta, 0)
	ma, mb := meta, meta
	ma.Gateways, ma.Identities = []string{"g0", "g1"}, []string{"c", "a", "b"}
	mb.Gateways = []string{"g3", "g2"}
	shift := 1234567 * time.Nanosecond
	mb.Start = meta.Start.Add(shift)
	a, b := history.New(ma, 0), history.New(mb, 0)
	for at := time.Duration(0); at < 3*time.Second; at += time.Duration(rng.IntN(int(time.Millisecond))) {
		r := history.Record{Intended: at, Sent: at + time.Duration(rng.IntN(1e5)), Decided: history.NoTime, RetryAfter: history.NoTime,
			Identity: uint32(rng.IntN(3)), Round: history.NoRound, Gateway: uint16(rng.IntN(4)), Outcome: decision.Outcome(1 + rng.IntN(3)), By: decision.ByRedis}
		r.Received = r.Sent + time.Duration(rng.IntN(5e6))
		whole.Append(r)
		if r.Gateway < 2 {
			r.Identity = [...]uint32{1, 2, 0}[r.Identity]
			a.Append(r)
		} else {
			r.Gateway = 3 - r.Gateway
			r.Intended -= shift
			r.Sent -= shift
			r.Received -= shift
			b.Append(r)
		}
	}
	merged, err := history.Merge(b, a)
	if err != nil {
		t.Fatal(err)
	}
	got, want := analyzed(t, merged, Options{}), analyzed(t, whole, Options{})
	for _, name := range []string{metric.Requests, metric.Allowed, metric.Denied, metric.Errors, metric.Ceiling, metric.CeilingUpper, metric.Burst, metric.SustainedRate, metric.Slipped, metric.P50, metric.P90, metric.P99, metric.P999, metric.Max} {
		if !near(got.Metrics[name], want.Metrics[name]) {
			t.Errorf("%s: merged %v, whole %v", name, got.Metrics[name], want.Metrics[name])
		}
	}
	for _, ir := range want.PerIdentity {
		for _, gr := range got.PerIdentity {
			if gr.Identity == ir.Identity && gr.Metrics[metric.Ceiling] != ir.Metrics[metric.Ceiling] {
				t.Errorf("identity %s ceiling: merged %v, whole %v", ir.Identity, gr.Metrics[metric.Ceiling], ir.Metrics[metric.Ceiling])
			}
		}
	}
}

func ExampleAnalyze() {
	// Three gateways each keep their own counter of 2 per second, so one
	// identity spread over them gets 6 per second: three times the limit.
	h := history.New(history.Meta{Limit: rate.Limit{Count: 2, Window: time.Second}, Identities: []string{"user-1"}}, 9)
	for k := range 9 {
		at := time.Duration(k) * 10 * time.Millisecond
		o := decision.Allowed
		if k >= 6 {
			o = decision.Denied
		}
		h.Append(history.Record{Intended: at, Sent: at, Received: at + time.Millisecond, Decided: history.NoTime,
			RetryAfter: time.Second, Gateway: uint16(k % 3), Outcome: o, By: decision.ByLocal})
	}
	res, err := Analyze(h, Options{})
	if err != nil {
		panic(err)
	}
	m := res.Metrics
	fmt.Println("allowed:", m[metric.Allowed], "ceiling:", m[metric.Ceiling], "ratio:", m[metric.CeilingRatio], "slipped:", m[metric.Slipped])
	// Output: allowed: 6 ceiling: 6 ratio: 3 slipped: 4
}

func TestAnalyzeNil(t *testing.T) {
	t.Parallel()
	res := analyzed(t, nil, Options{})
	if res.Metrics[metric.Requests] != 0 || len(res.Timeline) != 0 {
		t.Fatalf("analyzed(t, nil) = %+v, want an empty result", res)
	}
}

func TestPerIdentityCap(t *testing.T) {
	t.Parallel()
	const ids = maxPerIdentity + 50
	meta := history.Meta{Limit: rate.Limit{Count: 1, Window: time.Second}}
	for k := range ids {
		meta.Identities = append(meta.Identities, fmt.Sprintf("u%d", k))
	}
	h := history.New(meta, ids+4)
	for k := range ids {
		h.Append(rec(time.Duration(k)*time.Microsecond, uint32(k), 0, outcome(k%2 == 0)))
	}
	for j := range 4 { // the last identity is the worst: 4 in one window
		h.Append(rec(time.Duration(j)*time.Millisecond, ids-1, 0, decision.Allowed))
	}
	res := analyzed(t, h, Options{})
	if len(res.PerIdentity) != maxPerIdentity || res.PerIdentityOmitted != 50 {
		t.Fatalf("listed %d identities, omitted %d; want %d and 50", len(res.PerIdentity), res.PerIdentityOmitted, maxPerIdentity)
	}
	last := res.PerIdentity[len(res.PerIdentity)-1]
	if last.Identity != fmt.Sprintf("u%d", ids-1) || last.Metrics[metric.Ceiling] != 4 {
		t.Errorf("last listed = %s with ceiling %v, want the worst identity u%d with 4", last.Identity, last.Metrics[metric.Ceiling], ids-1)
	}
	// Every identity that had anything allowed (the even ones and the
	// last) outranks those that had nothing, so all of them are listed.
	withAllowed := 0
	for _, ir := range res.PerIdentity {
		if ir.Metrics[metric.Allowed] > 0 {
			withAllowed++
		}
	}
	if want := ids/2 + 1; withAllowed != want {
		t.Errorf("listed %d identities with allowed requests, want all %d", withAllowed, want)
	}
	if res.Metrics[metric.Requests] != ids+4 || res.Metrics[metric.Ceiling] != 4 {
		t.Errorf("scenario requests %v ceiling %v, want %d and 4", res.Metrics[metric.Requests], res.Metrics[metric.Ceiling], ids+4)
	}
}

// An error the target may have admitted (decision.ByUnanswered: a 5xx, a
// timeout after sending) raises ceiling_upper, never ceiling; an error
// never sent (a refused connection) raises neither.
func TestUnansweredErrorsRaiseOnlyTheUpperBound(t *testing.T) {
	l := rate.Limit{Count: 10, Window: time.Second}
	build := func(by decision.By) Metrics {
		h := history.New(history.Meta{Limit: l, Identities: []string{"u", "v"}}, 0)
		for i := range 5 {
			h.Append(rec(time.Duration(i)*10*time.Millisecond, 0, 0, decision.Allowed))
		}
		for i := range 3 {
			r := rec(time.Duration(100+i*10)*time.Millisecond, 0, 0, decision.Error)
			r.By = by
			h.Append(r)
		}
		// Another identity's unanswered errors are not u's.
		r := rec(200*time.Millisecond, 1, 0, decision.Error)
		r.By = decision.ByUnanswered
		h.Append(r)
		return analyzed(t, h, Options{}).Metrics
	}
	sent := build(decision.ByUnanswered)
	if sent[metric.Ceiling] != 5 || sent[metric.CeilingUpper] != 8 || sent[metric.Errors] != 4 {
		t.Errorf("unanswered: ceiling [%g, %g], errors %g; want [5, 8], 4", sent[metric.Ceiling], sent[metric.CeilingUpper], sent[metric.Errors])
	}
	never := build(decision.ByUnknown)
	if never[metric.Ceiling] != 5 || never[metric.CeilingUpper] != 5 {
		t.Errorf("never sent: ceiling [%g, %g]; want [5, 5]", never[metric.Ceiling], never[metric.CeilingUpper])
	}
}

// analyzed is Analyze of a history in memory, which never fails.
func analyzed(tb testing.TB, h *history.History, o Options) Result {
	tb.Helper()
	res, err := Analyze(h, o)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}
