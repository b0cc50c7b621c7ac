package traffic

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/workload"
)

// TestOverloadSendsOrDropsEveryHitOnce runs each paced pattern far above
// what its pool serves (4 workers, 1ms a request), so that workers take
// on from one request to the next and drop what came due meanwhile (see
// runPaced): every hit of the schedule is sent once or dropped once, each
// at its place in the schedule, and the progress counters end with every
// drop.
func TestOverloadSendsOrDropsEveryHitOnce(t *testing.T) {
	t.Parallel()
	const d = 300 * time.Millisecond
	tests := []struct {
		name string
		plan Plan
		pc   Pacer
	}{
		{"constant", Plan{Rate: perSecond(20000), Duration: d, MaxRequests: 1 << 20, Workers: 4},
			ConstantPacer{Rate: perSecond(20000), Duration: d}},
		{"capped", Plan{Rate: perSecond(20000), Duration: d, MaxRequests: 3000, Workers: 4},
			ConstantPacer{Rate: perSecond(20000), Duration: d}},
		{"ramp", Plan{Pattern: workload.PatternRamp, RampFrom: perSecond(1000), Rate: perSecond(40000), Duration: d, MaxRequests: 1 << 20, Workers: 4},
			RampPacer{From: perSecond(1000), To: perSecond(40000), Duration: d}},
		{"burst", Plan{Pattern: workload.PatternBurst, Limit: rate.Limit{Count: 100, Window: 50 * time.Millisecond}, Duration: d, MaxRequests: 1 << 20, Workers: 4},
			BurstPacer{Size: 100, Every: 50 * time.Millisecond, Duration: d}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lim := newWindowLimiter(1<<40, time.Hour, 3)
			lim.delay = time.Millisecond
			var last Stats
			h, err := Run(context.Background(), lim, tt.plan, RunOptions{Progress: func(s Stats) { last = s }})
			if err != nil {
				t.Fatal(err)
			}
			// The schedule: how many hits are due at each instant.
			due := map[time.Duration]int{}
			planned := 0
			for hit := uint64(0); hit < uint64(tt.plan.MaxRequests); hit++ {
				at, ok := tt.pc.Due(hit)
				if !ok {
					break
				}
				due[at]++
				planned++
			}
			for i := range h.Len() {
				at := h.Intended(i)
				if due[at] == 0 {
					t.Fatalf("record %d intended at %v: no hit of the schedule left there (sent twice, or off the schedule)", i, at)
				}
				due[at]--
			}
			drops := &h.Meta.Drops
			if err := drops.Check(len(h.Meta.Identities), len(h.Meta.Gateways), len(h.Meta.Endpoints)); err != nil {
				t.Fatal(err)
			}
			if got := int64(planned - h.Len()); drops.Total() != got {
				t.Fatalf("%d planned, %d sent, %d dropped: a hit lost or counted twice", planned, h.Len(), drops.Total())
			}
			if drops.Total() == 0 || h.Len() == 0 {
				t.Fatalf("%d sent, %d dropped: the run was not overloaded", h.Len(), drops.Total())
			}
			// Every hit not sent lies in a slice of the drops.
			for at, n := range due {
				if n == 0 {
					continue
				}
				in := false
				for _, s := range drops.Slices {
					in = in || at >= s.From && at <= s.To
				}
				if !in {
					t.Fatalf("%d hits due at %v were neither sent nor in a slice of the drops", n, at)
				}
			}
			if !last.Done || last.Dropped != uint64(drops.Total()) || last.Allowed+last.Denied+last.Errors != uint64(h.Len()) {
				t.Fatalf("progress ended at %+v; the run sent %d and dropped %d", last, h.Len(), drops.Total())
			}
		})
	}
}

// TestScheduleBatchesWakesAboveOnePerMinWake takes a schedule's hits as
// idle workers do: at 4,000/s each wakes its worker when due; at 20,000/s
// the hits due within minWake after a wake join the next one, never early
// and less than minWake late, so the workers wake once per minWake; and a
// worker that finds hits overdue while every other one is busy drops them
// all at once.
func TestScheduleBatchesWakesAboveOnePerMinWake(t *testing.T) {
	t.Parallel()
	// scheduled is a run's engine as runPaced starts it, every worker idle.
	scheduled := func(p Plan, pc Pacer) *engine {
		e, err := newEngine(t.Context(), newInstant(2), p, RunOptions{}, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		e.pc = pc
		e.free.Store(int64(p.Workers))
		return e
	}
	take := func(perSec int64, workers int) (*engine, func(now time.Duration) turn) {
		p := Plan{Rate: perSecond(perSec), Duration: time.Second, MaxRequests: perSec, Workers: workers, Identities: 4}
		e := scheduled(p, ConstantPacer{Rate: p.Rate, Duration: p.Duration})
		return e, func(now time.Duration) turn {
			tr, ok := e.sched.take(e, now)
			if !ok {
				t.Fatal("the schedule ended early")
			}
			return tr
		}
	}
	// At 20,000/s: a wake at 0, then one every 200µs up to 100ms, where
	// the hits due after 99.8ms wake.
	for perSec, want := range map[int64]int{4000: 400, 20000: 1 + int(100*time.Millisecond/minWake)} {
		_, next := take(perSec, 50)
		wakes := map[time.Duration]bool{}
		for range perSec / 10 { // the first 100 ms, taken at the start
			tr := next(0)
			if tr.drop || tr.wake < tr.at || tr.wake-tr.at >= minWake {
				t.Fatalf("%d/s: hit %d due at %v taken as %+v", perSec, tr.hit, tr.at, tr)
			}
			if perSec == 4000 && tr.wake != tr.at {
				t.Fatalf("4000/s: hit %d due at %v wakes at %v, not on time", tr.hit, tr.at, tr.wake)
			}
			wakes[tr.wake] = true
		}
		if len(wakes) != want {
			t.Errorf("%d/s: %d wakes in the first 100ms, want %d", perSec, len(wakes), want)
		}
	}

	// A ramp's batches start off the 200µs grid, where its rate passes
	// 1/minWake: the last ones still wake within the run, or their hits
	// would be neither sent nor dropped.
	ramp := Plan{Pattern: workload.PatternRamp, RampFrom: perSecond(1000), Rate: perSecond(20000), Duration: time.Second, MaxRequests: 1 << 20, Workers: 50, Identities: 4}
	re := scheduled(ramp, RampPacer{From: ramp.RampFrom, To: ramp.Rate, Duration: ramp.Duration})
	var latest time.Duration
	for {
		tr, ok := re.sched.take(re, 0)
		if !ok {
			break
		}
		if tr.drop || tr.wake < tr.at || tr.wake > ramp.Duration {
			t.Fatalf("ramp: hit %d due at %v taken as %+v", tr.hit, tr.at, tr)
		}
		latest = max(latest, tr.wake)
	}
	t.Logf("ramp: the last wake at %v", latest)

	e, next := take(20000, 2)
	if tr := next(0); tr.drop || tr.hit != 0 {
		t.Fatalf("first turn %+v", tr)
	}
	e.free.Store(1) // the other worker is busy
	if tr := next(time.Millisecond + time.Microsecond); !tr.drop || tr.hit != 1 || tr.end != 21 {
		t.Fatalf("1ms in, every other worker busy: %+v, want hits 1 to 20 dropped", tr)
	}
	e.free.Store(2) // both idle: an overdue hit is sent late, not dropped
	if tr := next(2 * time.Millisecond); tr.drop || tr.hit != 21 || tr.wake != tr.at {
		t.Fatalf("2ms in, another worker free: %+v, want hit 21 sent at once", tr)
	}
}

// TestLastDue finds the last hit of a schedule within a request budget.
func TestLastDue(t *testing.T) {
	t.Parallel()
	c := ConstantPacer{Rate: perSecond(100), Duration: time.Second} // hits at 0, 10ms, … 990ms
	tests := []struct {
		pc    Pacer
		limit uint64
		want  time.Duration
		ok    bool
	}{
		{c, 1 << 40, 990 * time.Millisecond, true},
		{c, 100, 990 * time.Millisecond, true},
		{c, 101, 990 * time.Millisecond, true},
		{c, 37, 360 * time.Millisecond, true},
		{c, 1, 0, true},
		{c, 0, 0, false},
		{ConstantPacer{Rate: perSecond(100), Duration: 0}, 10, 0, false},
		{BurstPacer{Size: 5, Every: 100 * time.Millisecond, Duration: 250 * time.Millisecond}, 1 << 20, 200 * time.Millisecond, true},
	}
	for _, tt := range tests {
		if got, ok := lastDue(tt.pc, tt.limit); got != tt.want || ok != tt.ok {
			t.Errorf("lastDue(%+v, %d) = %v, %v; want %v, %v", tt.pc, tt.limit, got, ok, tt.want, tt.ok)
		}
	}
}
