package traffic

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
	"github.com/rlctl/rlctl/internal/workload"
)

func perSecond(n int64) rate.Limit { return rate.Limit{Count: n, Window: time.Second} }

func TestRunConstantRecordsEveryRequest(t *testing.T) {
	t.Parallel()
	lim := newWindowLimiter(5, time.Hour, 3)
	plan := Plan{Rate: perSecond(200), Duration: 300 * time.Millisecond, MaxRequests: 1000, Identities: 2}
	h, err := Run(context.Background(), lim, plan, RunOptions{Meta: history.Meta{Scenario: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	// 200/s for 0.3 s is 60 requests, scheduled at i·5ms.
	if h.Len() != 60 {
		t.Fatalf("%d records; want 60", h.Len())
	}
	c := traffictest.Counts(h)
	if c[decision.Allowed] != 10 || c[decision.Denied] != 50 {
		t.Fatalf("outcomes %v; want 10 allowed (5 per identity), 50 denied", c)
	}
	if h.Meta.Scenario != "s" || len(h.Meta.Identities) != 2 || h.Meta.Identities[1] != "user-1" ||
		len(h.Meta.Gateways) != 3 || h.Meta.Start.IsZero() {
		t.Fatalf("meta not filled: %+v", h.Meta)
	}
	perGateway := map[uint16]int{}
	intended := map[time.Duration]bool{}
	for i := range h.Len() {
		r := h.At(i)
		if r.Sent < r.Intended || r.Received < r.Sent {
			t.Fatalf("record %d: times out of order: %+v", i, r)
		}
		if r.Round != history.NoRound || r.By != decision.ByLocal || r.Decided == history.NoTime {
			t.Fatalf("record %d: %+v", i, r)
		}
		if r.Outcome == decision.Denied && r.RetryAfter <= 0 {
			t.Fatalf("denied record %d without retry-after: %+v", i, r)
		}
		perGateway[r.Gateway]++
		intended[r.Intended] = true
	}
	if len(perGateway) != 3 {
		t.Fatalf("round-robin used gateways %v; want all 3", perGateway)
	}
	for i := 0; i < 60; i++ {
		if !intended[time.Duration(i)*5*time.Millisecond] {
			t.Fatalf("no request intended at %v", time.Duration(i)*5*time.Millisecond)
		}
	}
}

func TestRunBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		plan Plan
		want int
	}{
		{"max requests first", Plan{Rate: perSecond(1000), Duration: time.Hour, MaxRequests: 25}, 25},
		{"duration first", Plan{Rate: perSecond(100), Duration: 200 * time.Millisecond, MaxRequests: 1 << 30}, 20},
		{"burst capped", Plan{Pattern: workload.PatternBurst, Limit: rate.Limit{Count: 10, Window: 100 * time.Millisecond},
			Duration: time.Hour, MaxRequests: 35}, 35},
		{"burst duration", Plan{Pattern: workload.PatternBurst, Limit: rate.Limit{Count: 10, Window: 100 * time.Millisecond},
			Duration: 250 * time.Millisecond, MaxRequests: 1000}, 30},
		{"ramp capped", Plan{Pattern: workload.PatternRamp, Rate: perSecond(1000), Duration: 2 * time.Second, MaxRequests: 40}, 40},
		{"closed capped", Plan{Model: workload.ModelClosed, Concurrency: 4, Duration: time.Hour, MaxRequests: 500}, 500},
		{"race capped", Plan{Pattern: workload.PatternRace, Limit: rate.Limit{Count: 3, Window: time.Hour}, Rounds: 100,
			Duration: time.Hour, MaxRequests: 30}, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			h, err := Run(context.Background(), newInstant(4), tt.plan, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h.Len() != tt.want {
				t.Fatalf("%d records; want %d", h.Len(), tt.want)
			}
			if took := time.Since(began); took > tt.plan.Duration+10*time.Second {
				t.Fatalf("run took %v", took)
			}
		})
	}
}

func TestRunClosedDuration(t *testing.T) {
	t.Parallel()
	lim := newWindowLimiter(1000, time.Hour, 2)
	lim.delay = time.Millisecond
	plan := Plan{Model: workload.ModelClosed, Concurrency: 3, Duration: 150 * time.Millisecond, MaxRequests: 1 << 40}
	began := time.Now()
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() == 0 {
		t.Fatal("closed run sent nothing")
	}
	for i := range h.Len() {
		if r := h.At(i); r.Intended >= plan.Duration || r.Outcome != decision.Allowed {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("closed run took %v", took)
	}
}

func TestClosedRunOutlastingGraceHasNoErrors(t *testing.T) {
	t.Parallel()
	// The grace period starts when the schedule ends, not when the closed
	// model's loops start: a run longer than its grace must not have its
	// requests cancelled.
	lim := newWindowLimiter(1<<30, time.Hour, 2)
	lim.delay = 2 * time.Millisecond
	plan := Plan{Model: workload.ModelClosed, Concurrency: 4, Duration: 600 * time.Millisecond, MaxRequests: 1 << 30}
	h, err := Run(context.Background(), lim, plan, RunOptions{Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if c := traffictest.Counts(h); c[decision.Error] != 0 || c[decision.Allowed] == 0 {
		t.Fatalf("outcomes %v; want only allowed", c)
	}
	var last time.Duration
	for i := range h.Len() {
		last = max(last, h.At(i).Intended)
	}
	if last < 300*time.Millisecond {
		t.Fatalf("last request intended at %v; the closed run stopped early", last)
	}
}

func TestOpenModelKeepsScheduleWhenTargetSlows(t *testing.T) {
	t.Parallel()
	lim := newWindowLimiter(1<<30, time.Hour, 1)
	lim.delay = 120 * time.Millisecond
	// 1 worker, 100/s for 0.5 s: each request holds the worker for 120 ms,
	// so most scheduled requests find it busy.
	plan := Plan{Rate: perSecond(100), Duration: 500 * time.Millisecond, MaxRequests: 1000, Workers: 1}
	began := time.Now()
	h, err := Run(context.Background(), lim, plan, RunOptions{Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	c := traffictest.Counts(h)
	if c[decision.Dropped] == 0 || c[decision.Allowed] == 0 || c[decision.Dropped]+c[decision.Allowed] != 50 {
		t.Fatalf("outcomes %v; want some dropped, the rest allowed, 50 in all", c)
	}
	// Dropped requests are tallied, not recorded: one record for each
	// request sent.
	if h.Len() != c[decision.Allowed] {
		t.Fatalf("%d records for %d requests sent", h.Len(), c[decision.Allowed])
	}
	// A dropped request keeps its place in the schedule; an answered one
	// measures its latency from the intended time, so it includes the delay.
	for _, s := range h.Meta.Drops.Slices {
		if s.From%(10*time.Millisecond) != 0 || s.To%(10*time.Millisecond) != 0 {
			t.Fatalf("drops intended from %v to %v, off the 10ms schedule", s.From, s.To)
		}
	}
	for i := range h.Len() {
		r := h.At(i)
		if r.Intended%(10*time.Millisecond) != 0 {
			t.Fatalf("record %d intended at %v, off the 10ms schedule", i, r.Intended)
		}
		if r.Outcome == decision.Allowed && r.Received-r.Intended < lim.delay {
			t.Fatalf("record %d: latency %v from intended is below the target's delay", i, r.Received-r.Intended)
		}
	}
	// The schedule was not stretched to wait for the worker: the run ends
	// at its duration plus the last request's delay (~0.6 s), far from the
	// 50×120 ms = 6 s a waiting schedule would take.
	if took > 3*time.Second {
		t.Fatalf("run took %v; the schedule waited for the slow target", took)
	}
}

func TestRunCancelReturnsPartialHistory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	lim := newWindowLimiter(1<<30, time.Hour, 1)
	lim.delay = 20 * time.Millisecond
	plan := Plan{Rate: perSecond(200), Duration: time.Hour, MaxRequests: 1 << 30}
	var hooked atomic.Bool
	o := RunOptions{Hooks: []Hook{{At: 100 * time.Millisecond, Name: "cancel", Fn: func(context.Context) {
		hooked.Store(true)
		cancel()
	}}}}
	h, err := Run(ctx, lim, plan, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want it to wrap context.Canceled", err)
	}
	if !hooked.Load() || h == nil || h.Len() == 0 {
		t.Fatalf("no partial history (hook ran %v)", hooked.Load())
	}
	// In-flight requests were drained, not cut: none is an error.
	if c := traffictest.Counts(h); c[decision.Error] != 0 {
		t.Fatalf("outcomes %v; in-flight requests should finish within the grace", c)
	}
}

func TestGraceCancelsStuckRequests(t *testing.T) {
	t.Parallel()
	lim := newWindowLimiter(1<<30, time.Hour, 1)
	lim.delay = time.Hour // never answers unless cancelled
	plan := Plan{Rate: perSecond(50), Duration: 100 * time.Millisecond, MaxRequests: 100}
	began := time.Now()
	h, err := Run(context.Background(), lim, plan, RunOptions{Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if c := traffictest.Counts(h); c[decision.Error] != 5 {
		t.Fatalf("outcomes %v; want the 5 stuck requests as errors", c)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("run took %v", took)
	}
}

func TestHooksAndProgress(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var fired []string
	var last Stats
	var calls int
	o := RunOptions{
		Hooks: []Hook{
			{At: 50 * time.Millisecond, Name: "a", Fn: func(context.Context) { mu.Lock(); fired = append(fired, "a"); mu.Unlock() }},
			{At: time.Hour, Name: "never", Fn: func(context.Context) { mu.Lock(); fired = append(fired, "never"); mu.Unlock() }},
		},
		ProgressEvery: 10 * time.Millisecond,
		Progress:      func(s Stats) { mu.Lock(); last = s; calls++; mu.Unlock() },
	}
	plan := Plan{Rate: perSecond(100), Duration: 200 * time.Millisecond, MaxRequests: 1000}
	h, err := Run(context.Background(), newInstant(1), plan, o)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(fired) != 1 || fired[0] != "a" {
		t.Fatalf("hooks fired %v; want [a]", fired)
	}
	if calls < 2 || !last.Done || last.Completed() != uint64(h.Len()) || last.Allowed != 20 || last.Planned != plan.Duration {
		t.Fatalf("progress: %d calls, last %+v; want the final snapshot to match %d records", calls, last, h.Len())
	}
}

// TestFaultsRecordWhenTheirHooksActed: a fault's At becomes when its hook
// marked it applied (here 30ms after the hook began), and a held fault's
// For how long the hook held it; a fault no hook matches, and one whose
// hook never ran, keep their planned times.
func TestFaultsRecordWhenTheirHooksActed(t *testing.T) {
	t.Parallel()
	planned := []history.Fault{
		{At: 40 * time.Millisecond, For: 20 * time.Millisecond, Action: "redis-down"},
		{At: 60 * time.Millisecond, Action: "redis-reset"},
		{At: 70 * time.Millisecond, Action: "unhooked"},
		{At: time.Hour, Action: "redis-latency", For: time.Second},
	}
	o := RunOptions{
		Meta: history.Meta{Faults: slices.Clone(planned)},
		Hooks: []Hook{
			{At: 40 * time.Millisecond, Name: "redis-down", Holds: true, Fn: func(ctx context.Context) {
				time.Sleep(30 * time.Millisecond) // preparing
				Applied(ctx)
				time.Sleep(50 * time.Millisecond) // held
			}},
			{At: 60 * time.Millisecond, Name: "redis-reset", Fn: func(ctx context.Context) { time.Sleep(10 * time.Millisecond) }},
			{At: time.Hour, Name: "redis-latency", Holds: true, Fn: func(context.Context) {}},
		},
	}
	plan := Plan{Rate: perSecond(100), Duration: 300 * time.Millisecond, MaxRequests: 1000}
	h, err := Run(context.Background(), newInstant(1), plan, o)
	if err != nil {
		t.Fatal(err)
	}
	f := h.Meta.Faults
	if len(f) != len(planned) {
		t.Fatalf("faults %+v", f)
	}
	if down := f[0]; down.At < planned[0].At+30*time.Millisecond || down.For < 50*time.Millisecond {
		t.Errorf("redis-down recorded at %v for %v; want at least 70ms, held at least 50ms", down.At, down.For)
	}
	if reset := f[1]; reset.At < planned[1].At || reset.For != 0 {
		t.Errorf("redis-reset recorded at %v for %v; want from 60ms on, for 0 (its hook holds nothing)", reset.At, reset.For)
	}
	if f[2] != planned[2] || f[3] != planned[3] {
		t.Errorf("unhooked %+v and never run %+v; want them as planned", f[2], f[3])
	}
	Applied(context.Background()) // outside a hook: nothing, no panic
}

func TestPlanValidation(t *testing.T) {
	t.Parallel()
	lim := rate.Limit{Count: 10, Window: time.Second}
	tests := []struct {
		name string
		plan Plan
	}{
		{"no duration", Plan{Rate: perSecond(1), MaxRequests: 1}},
		{"no max", Plan{Rate: perSecond(1), Duration: time.Second}},
		{"no rate", Plan{Duration: time.Second, MaxRequests: 1}},
		{"unknown pattern", Plan{Pattern: "zigzag", Rate: perSecond(1), Duration: time.Second, MaxRequests: 1}},
		{"unknown model", Plan{Model: "half-open", Rate: perSecond(1), Duration: time.Second, MaxRequests: 1}},
		{"unknown spread", Plan{Spread: "hash", Rate: perSecond(1), Duration: time.Second, MaxRequests: 1}},
		{"burst without limit", Plan{Pattern: workload.PatternBurst, Duration: time.Second, MaxRequests: 1}},
		{"boundary bad align", Plan{Pattern: workload.PatternBoundary, Align: "moon", Limit: lim, Duration: time.Second, MaxRequests: 1}},
		{"closed race", Plan{Model: workload.ModelClosed, Pattern: workload.PatternRace, Limit: lim, Duration: time.Second, MaxRequests: 1}},
		{"shares mismatch", Plan{Rate: perSecond(1), Duration: time.Second, MaxRequests: 1, EndpointShares: []float64{1, 2}}},
		{"names mismatch", Plan{Rate: perSecond(1), Duration: time.Second, MaxRequests: 1, Identities: 3, IdentityNames: []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), newInstant(1), tt.plan, RunOptions{})
			if !errors.Is(err, ErrInvalidPlan) {
				t.Fatalf("err = %v; want ErrInvalidPlan", err)
			}
		})
	}
}

func TestSpreadSticky(t *testing.T) {
	t.Parallel()
	plan := Plan{Rate: perSecond(1000), Duration: time.Second, MaxRequests: 100, Identities: 3, Spread: workload.SpreadSticky, Seed: 7}
	h, err := Run(context.Background(), newInstant(8), plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gw := map[uint32]map[uint16]bool{}
	for i := range h.Len() {
		r := h.At(i)
		if gw[r.Identity] == nil {
			gw[r.Identity] = map[uint16]bool{}
		}
		gw[r.Identity][r.Gateway] = true
	}
	for id, g := range gw {
		if len(g) != 1 {
			t.Fatalf("sticky identity %d went to gateways %v", id, g)
		}
	}
}

func TestEndpointShares(t *testing.T) {
	t.Parallel()
	tgt := newInstant(1)
	tgt.eps = []string{"login", "feed"}
	plan := Plan{Rate: perSecond(4000), Duration: 250 * time.Millisecond, MaxRequests: 1000, EndpointShares: []float64{0.2, 0.8}}
	h, err := Run(context.Background(), tgt, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := [2]int{}
	for i := range h.Len() {
		n[h.At(i).Endpoint]++
	}
	if n[0] < 130 || n[0] > 270 {
		t.Fatalf("endpoint split %v of %d; want about 20%% login", n, h.Len())
	}
}

// warming wraps instant and records Warm: when it ran and with how many
// connections, and whether any request came first.
type warming struct {
	instant
	mu        sync.Mutex
	conns     []int
	requested atomic.Bool
	early     bool // Warm ran after a request
}

func (w *warming) Do(ctx context.Context, r Request) Response {
	w.requested.Store(true)
	return w.instant.Do(ctx, r)
}

func (w *warming) Warm(ctx context.Context, conns int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conns = append(w.conns, conns)
	w.early = w.early || w.requested.Load()
	return errors.New("warm failed") // a failed warm-up must not stop the run
}

// The engine warms a target once, before the first request and before the
// run's clock starts, with each gateway's share of the requests that can be
// in flight (at most maxWarm), and runs even when warming fails.
func TestRunWarmsTargetFirst(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		plan     Plan
		gateways int
		want     int
	}{
		{"open", Plan{Rate: perSecond(100), Duration: 50 * time.Millisecond, MaxRequests: 100, Workers: 10}, 3, 4},
		{"closed", Plan{Model: workload.ModelClosed, Concurrency: 7, Duration: 50 * time.Millisecond, MaxRequests: 100}, 2, 4},
		{"capped", Plan{Rate: perSecond(100), Duration: 50 * time.Millisecond, MaxRequests: 100, Workers: 1000}, 1, maxWarm},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &warming{instant: newInstant(tt.gateways)}
			h, err := Run(context.Background(), w, tt.plan, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h.Len() == 0 {
				t.Fatal("no request after a failed warm-up")
			}
			if len(w.conns) != 1 || w.conns[0] != tt.want || w.early {
				t.Fatalf("Warm calls %v (after a request: %v), want one with %d before any request", w.conns, w.early, tt.want)
			}
		})
	}
}

// A run whose schedule ends early (one burst per hour-long window) still
// lasts its planned duration when a fault is due in it: the fault happens,
// and the run watches what follows.
func TestPlannedFaultHappensAfterTheScheduleEnded(t *testing.T) {
	t.Parallel()
	var fired atomic.Bool
	o := RunOptions{Hooks: []Hook{{At: 150 * time.Millisecond, Name: "redis-reset", Fn: func(context.Context) { fired.Store(true) }}}}
	plan := Plan{Pattern: workload.PatternBurst, Rate: perSecond(1000), BurstSize: 5, Identities: 1,
		Limit: rate.Limit{Count: 5, Window: time.Hour}, Duration: 250 * time.Millisecond, MaxRequests: 100}
	start := time.Now()
	h, err := Run(context.Background(), newInstant(1), plan, o)
	if err != nil {
		t.Fatal(err)
	}
	if !fired.Load() {
		t.Fatal("the fault planned at 150ms of a 250ms run never happened: the run ended with its schedule")
	}
	if h.Len() != 5 {
		t.Errorf("%d requests; want the one burst of 5", h.Len())
	}
	if took := time.Since(start); took < plan.Duration {
		t.Errorf("the run took %s, shorter than its planned %s", took, plan.Duration)
	}
}

// TestProgressCurrentAtALowRate: an idle worker keeps its records for
// at most holdIdle before the collector counts them, so at 8 requests/s
// over 4 workers (each idle half a second between requests) progress
// almost never lags by more than the request just answered.
func TestProgressCurrentAtALowRate(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var snaps, behind int
	o := RunOptions{
		ProgressEvery: 10 * time.Millisecond,
		Progress: func(s Stats) {
			mu.Lock()
			defer mu.Unlock()
			snaps++
			if s.Sent > s.Completed()+1 {
				behind++
			}
		},
	}
	plan := Plan{Rate: perSecond(8), Duration: 1500 * time.Millisecond, MaxRequests: 100, Workers: 4}
	if _, err := Run(context.Background(), newInstant(1), plan, o); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if snaps < 20 || behind*10 > snaps {
		t.Fatalf("%d of %d progress snapshots counted two or more requests fewer than were sent", behind, snaps)
	}
}
