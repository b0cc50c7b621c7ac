package traffic

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
	"github.com/rlctl/rlctl/internal/workload"
)

func TestRaceCorrectLimiterAdmitsOnePerRound(t *testing.T) {
	t.Parallel()
	lim := newWindowLimiter(5, time.Hour, 6)
	plan := Plan{Pattern: workload.PatternRace, Limit: rate.Limit{Count: 5, Window: time.Hour}, Rounds: 10, Identities: 2,
		Duration: 20 * time.Second, MaxRequests: 100000}
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta.Rounds != 10 {
		t.Fatalf("Meta.Rounds = %d; want 10", h.Meta.Rounds)
	}
	allowed := traffictest.RaceShape(t, h, 2, 6, 5)
	for k, a := range allowed {
		if a != 1 {
			t.Fatalf("round %v: %d released requests allowed; a locked limiter admits exactly 1", k, a)
		}
	}
}

func TestRaceExposesCheckThenIncrement(t *testing.T) {
	t.Parallel()
	lim := newWindowLimiter(3, time.Hour, 8)
	lim.checkThenSet, lim.pause = true, 2*time.Millisecond
	plan := Plan{Pattern: workload.PatternRace, Limit: rate.Limit{Count: 3, Window: time.Hour}, Rounds: 5,
		Duration: 20 * time.Second, MaxRequests: 100000}
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta.Rounds != 5 {
		t.Fatalf("Meta.Rounds = %d; want 5", h.Meta.Rounds)
	}
	excess := 0
	for _, a := range traffictest.RaceShape(t, h, 1, 8, 3) {
		excess += a - 1
	}
	if excess <= 0 {
		t.Fatalf("race excess %d; a check-then-increment limiter released through 8 gateways at once should over-admit", excess)
	}
}

// TestRaceVoidsRoundsWithoutAFullPrefill: when the prefill is not all
// allowed (here a limiter holding 2 where 5 is published), the release
// starts from a quota other than one, so the round says nothing about a
// race: it is not counted and its records stay unmarked. Counting it would
// report a race_excess of 0 for rounds that never tested atomicity.
func TestRaceVoidsRoundsWithoutAFullPrefill(t *testing.T) {
	t.Parallel()
	lim := newWindowLimiter(2, time.Hour, 4)
	plan := Plan{Pattern: workload.PatternRace, Limit: rate.Limit{Count: 5, Window: time.Hour}, Rounds: 6,
		Duration: 20 * time.Second, MaxRequests: 100000}
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta.Rounds != 0 {
		t.Fatalf("Meta.Rounds = %d; want 0 (no prefill was fully allowed)", h.Meta.Rounds)
	}
	for i := range h.Len() {
		if h.At(i).Round != history.NoRound {
			t.Fatalf("record %d is marked with round %d", i, h.At(i).Round)
		}
	}
	// The rounds still ran: 6 rounds × 1 identity × (4 prefill + 4 released).
	if h.Len() != 6*8 {
		t.Fatalf("%d records; want %d", h.Len(), 6*8)
	}
}

func TestRaceRoundsStayInsideEpochWindows(t *testing.T) {
	t.Parallel()
	const w = 300 * time.Millisecond
	lim := newWindowLimiter(4, w, 4)
	lim.epoch = true
	lim.delay = time.Millisecond // rounds take a few ms, so 200 of them cross boundaries
	plan := Plan{Pattern: workload.PatternRace, Limit: rate.Limit{Count: 4, Window: w}, Rounds: 200,
		Duration: 1200 * time.Millisecond, MaxRequests: 100000}
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta.Rounds == 0 {
		t.Fatal("no rounds")
	}
	if last := h.At(h.Len() - 1).Sent; last < w {
		t.Fatalf("rounds ended at %v, inside the first window: the test does not cross a boundary", last)
	}
	// A correct limiter admits one released request per valid round: no
	// round counted a fresh window's quota as a race.
	for k, a := range traffictest.RaceShape(t, h, 1, 4, 4) {
		if a != 1 {
			t.Fatalf("round %v: %d allowed; want 1", k, a)
		}
	}
	// Every valid round's records (prefill and release) fall in one epoch
	// window.
	valid := map[int]bool{}
	for i := range h.Len() {
		if r := h.At(i); r.Round != history.NoRound {
			valid[int(r.Round)] = true
		}
	}
	win := map[int]int64{}
	for i := range h.Len() {
		r := h.At(i)
		var round, idx int
		fmt.Sscanf(h.Meta.Identities[r.Identity], "race-%d-%d", &round, &idx)
		if !valid[round] {
			continue
		}
		wid := (h.Meta.Start.UnixNano() + int64(r.Sent)) / int64(w)
		if prev, ok := win[round]; ok && prev != wid {
			t.Fatalf("round %d spans windows %d and %d", round, prev, wid)
		}
		win[round] = wid
	}
}

func TestRaceVoidsRoundsThatStraddleABoundary(t *testing.T) {
	t.Parallel()
	// Every decision takes 30 ms, so a round (prefill, then release) takes
	// at least 60 ms and can never fit in a 50 ms window.
	const w = 50 * time.Millisecond
	lim := newWindowLimiter(3, w, 3)
	lim.epoch, lim.delay = true, 30*time.Millisecond
	plan := Plan{Pattern: workload.PatternRace, Limit: rate.Limit{Count: 3, Window: w}, Rounds: 4,
		Duration: 2 * time.Second, MaxRequests: 100000}
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta.Rounds != 0 {
		t.Fatalf("Meta.Rounds = %d; every round straddled a boundary and should be void", h.Meta.Rounds)
	}
	if h.Len() != 4*(2+3) {
		t.Fatalf("%d records; want 4 rounds of 2 prefill + 3 released", h.Len())
	}
	traffictest.RaceShape(t, h, 1, 3, 3)
}

func TestBoundary(t *testing.T) {
	t.Parallel()
	const w = 400 * time.Millisecond
	const l = 5
	tests := []struct {
		name      string
		align     string
		epoch     bool
		noHints   bool
		retryOnly bool
	}{
		{"epoch", workload.AlignEpoch, true, false, false},
		{"first request", workload.AlignFirstRequest, false, false, false},
		{"auto from reset", workload.AlignAuto, true, false, false},
		{"auto from denials, epoch", workload.AlignAuto, true, true, false},
		{"auto from denials, first request", workload.AlignAuto, false, true, false},
		{"auto from retry-after, epoch", workload.AlignAuto, true, false, true},
		{"auto from retry-after, first request", workload.AlignAuto, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A run in which no boundary batch left on time (the machine
			// stalled) measures no burst: it is run again, and three such
			// runs fail.
			busy := calmtest.Retry(t, 3, func(int) string {
				lim := newWindowLimiter(l, w, 3)
				lim.epoch, lim.noHints, lim.retryOnly = tt.epoch, tt.noHints, tt.retryOnly
				plan := Plan{Pattern: workload.PatternBoundary, Align: tt.align, Limit: rate.Limit{Count: l, Window: w}, Identities: 2,
					Duration: 2500 * time.Millisecond, MaxRequests: 100000}
				h, err := Run(context.Background(), lim, plan, RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				allowed, onTime, least := traffictest.BoundaryShape(t, h, 2, l)
				if tt.noHints || tt.retryOnly {
					want := map[bool]string{false: workload.AlignFirstRequest, true: workload.AlignEpoch}[tt.epoch]
					for i, a := range h.Meta.Aims {
						if a.How != want {
							t.Fatalf("boundary %d aimed as %q (aims %+v); the windows are %s", i, a.How, h.Meta.Aims, want)
						}
					}
				}
				if tt.epoch && tt.align != workload.AlignFirstRequest {
					for _, b := range h.Meta.Boundaries {
						off := (h.Meta.Start.UnixNano() + int64(b)) % int64(w)
						if d := min(off, int64(w)-off); time.Duration(d) > w/20 {
							t.Fatalf("boundary %v is %v from an epoch multiple of %v", b, time.Duration(d), w)
						}
					}
				}
				if onTime == 0 {
					return "no boundary batch went out on time: the burst was never measured"
				}
				// The limiter says when it decided, so every edge is known
				// to the µs: every identity's shots straddle its own.
				requireBoundaryBurst(t, h, l, allowed, onTime, least)
				return ""
			})
			if busy != "" {
				t.Fatal("in three runs " + busy)
			}
		})
	}
}

func TestPatternsBoundedWhenTargetHangs(t *testing.T) {
	t.Parallel()
	lim := rate.Limit{Count: 3, Window: 200 * time.Millisecond}
	tests := []struct {
		name string
		plan Plan
	}{
		{"race", Plan{Pattern: workload.PatternRace, Rounds: 10}},
		{"boundary epoch", Plan{Pattern: workload.PatternBoundary, Align: workload.AlignEpoch}},
		{"boundary first request", Plan{Pattern: workload.PatternBoundary, Align: workload.AlignFirstRequest}},
		{"boundary auto", Plan{Pattern: workload.PatternBoundary, Align: workload.AlignAuto}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hang := newWindowLimiter(3, lim.Window, 2)
			hang.delay = time.Hour // answers only when cancelled
			p := tt.plan
			p.Limit, p.Duration, p.MaxRequests = lim, 600*time.Millisecond, 10000
			began := time.Now()
			h, err := Run(context.Background(), hang, p, RunOptions{Grace: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Fatalf("run against a hanging target took %v", took)
			}
			if c, n := traffictest.Counts(h), traffictest.Requests(h); n == 0 || c[decision.Error]+c[decision.Dropped] != n {
				t.Fatalf("outcomes %v; every request should come back as an error (or be dropped)", c)
			}
		})
	}
}

// rec is a probe's record: sent at sent, answered rtt later, decided at
// the server at decided (NoTime: the server did not say).
func rec(id uint32, sent, rtt time.Duration, out decision.Outcome) history.Record {
	return history.Record{Identity: id, Sent: sent, Received: sent + rtt, Decided: history.NoTime, Outcome: out}
}

// The edge probes teach is known only as well as the probes agree: one
// identity's probe held up 6 ms puts its window's edge 3 ms from the
// median of two, beyond their half round trips of 0.5 ms; a probe denied
// leaves its identity's edge unknown within a window.
func TestOpenedAtCountsTheProbesSpread(t *testing.T) {
	ms := time.Millisecond
	b, err, ok := openedAt([]history.Record{rec(0, 10*ms, ms, decision.Allowed), rec(1, 10*ms, ms, decision.Allowed)}, time.Second)
	if !ok || b != 10*ms+ms/2 || err != ms/2 {
		t.Errorf("agreeing probes: edge %v ±%v, %v; want 10.5ms ±0.5ms", b, err, ok)
	}
	b, err, ok = openedAt([]history.Record{rec(0, 10*ms, ms, decision.Allowed), rec(1, 16*ms, ms, decision.Allowed)}, time.Second)
	if !ok || b != 16*ms+ms/2 || err != 6*ms+ms/2 {
		t.Errorf("probes 6 ms apart: edge %v ±%v, %v; want 16.5ms ±6.5ms", b, err, ok)
	}
	_, err, ok = openedAt([]history.Record{rec(0, 10*ms, ms, decision.Allowed), rec(1, 10*ms, ms, decision.Denied)}, time.Second)
	if !ok || err != time.Second {
		t.Errorf("one probe denied: ±%v, %v; want ±1s", err, ok)
	}
	if _, _, ok := openedAt([]history.Record{rec(0, 10*ms, ms, decision.Denied)}, time.Second); ok {
		t.Error("no probe allowed: an edge")
	}
}

// Reset hints that disagree (windows opened apart) widen the edge's
// uncertainty by their distance from the median, beyond each hint's own.
func TestFromHeadersCountsTheHintsSpread(t *testing.T) {
	ms := time.Millisecond
	recs := []history.Record{rec(0, 0, 2*ms, decision.Allowed), rec(1, 0, 2*ms, decision.Allowed), rec(2, 0, 2*ms, decision.Allowed)}
	resps := []Response{{Reset: 100 * ms, HintPrecision: ms}, {Reset: 100 * ms, HintPrecision: ms}, {Reset: 140 * ms, HintPrecision: ms}}
	b, err, ok := fromHeaders(recs, resps, 50*ms)
	if want := 101 * ms; !ok || b != want || err != 40*ms+2*ms {
		t.Errorf("edge %v ±%v, %v; want %v ±42ms", b, err, ok, want)
	}
}

// A window opened at a first request ends W after the target decided the
// request: exactly when the target said when, else somewhere in the
// round trip; every window the probes were decided in has ended by the
// latest of those.
func TestFreshEdgeAndWindowsEnd(t *testing.T) {
	ms, W := time.Millisecond, time.Second
	r := rec(0, 10*ms, 4*ms, decision.Allowed)
	if lo, hi := freshEdge(r, W); lo != W+10*ms || hi != W+14*ms {
		t.Errorf("no decision time: edge in [%v, %v]; want [1.01s, 1.014s]", lo, hi)
	}
	r.Decided = 13 * ms
	if lo, hi := freshEdge(r, W); lo != W+13*ms || hi != lo {
		t.Errorf("decided at 13ms: edge in [%v, %v]; want 1.013s", lo, hi)
	}
	probes := []history.Record{r, rec(1, 10*ms, 9*ms, decision.Denied), rec(2, 11*ms, 2*ms, decision.Allowed)}
	if got := windowsEnd(probes, W); got != W+19*ms {
		t.Errorf("windows end at %v; want 1.019s, the denied probe's answer plus a window", got)
	}
}

// A window that opened at a first request and happens to end on an epoch
// multiple looks, from the denials, like an epoch-aligned edge; so does an
// epoch-aligned window probed just after its edge. Learning tells them
// apart and aims every boundary as the target really rolls its windows.
// The run starts just after an epoch multiple of the window, so the
// probes open (or land in) windows at one; a run in which the first
// identity's denials did not end astride an epoch multiple did not set up
// the ambiguity, and is run again.
func TestBoundaryLearnsAlignmentWhenAnEdgeLooksEpochAligned(t *testing.T) {
	t.Parallel()
	// A window long enough that the denials' steps (W/50) are wider
	// than the few ms a run takes to send its first probe.
	const w = time.Second
	const l = 5
	for _, epoch := range []bool{false, true} {
		want := map[bool]string{false: workload.AlignFirstRequest, true: workload.AlignEpoch}[epoch]
		t.Run(want, func(t *testing.T) {
			t.Parallel()
			busy := calmtest.Retry(t, 3, func(int) string {
				lim := newWindowLimiter(l, w, 2)
				lim.epoch, lim.noHints = epoch, true
				plan := Plan{Pattern: workload.PatternBoundary, Align: workload.AlignAuto, Limit: rate.Limit{Count: l, Window: w}, Identities: 2,
					Duration: 5200 * time.Millisecond, MaxRequests: 100000}
				now := time.Now().UnixNano()
				time.Sleep(time.Duration(int64(w) - now%int64(w)))
				h, err := Run(context.Background(), lim, plan, RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !rolledAstrideEpoch(h, w) {
					return "the first identity's window never rolled astride an epoch multiple: the case was never set up"
				}
				if len(h.Meta.Aims) == 0 {
					t.Fatalf("no boundary aimed in %v", plan.Duration)
				}
				for i, a := range h.Meta.Aims {
					if a.How != want {
						t.Fatalf("boundary %d aimed as %q (aims %+v); the target's windows are %s", i, a.How, h.Meta.Aims, want)
					}
				}
				allowed, onTime, least := traffictest.BoundaryShape(t, h, 2, l)
				if onTime == 0 || !traffictest.AimedWithinSpan(h) {
					return fmt.Sprintf("no boundary batch went out on time at an edge learned within the shots' span (aims %+v)", h.Meta.Aims)
				}
				// Each identity's quota before the edge (less the probe's)
				// and after it: far more than the limit.
				requireBoundaryBurst(t, h, l, allowed, onTime, least)
				return ""
			})
			if busy != "" {
				t.Fatal("in three runs " + busy)
			}
		})
	}
}

// requireBoundaryBurst fails t unless the fixed window of two identities
// let its boundary burst through around the onTime boundaries batches
// reached on time (traffictest.BoundaryShape's figures): nearly 2L each,
// far more than the L per W a correct limit allows, and more than L for
// every identity around each.
func requireBoundaryBurst(t *testing.T, h *history.History, l, allowed, onTime, least int) {
	t.Helper()
	if limitOnly := onTime * l * 2; allowed <= limitOnly {
		t.Fatalf("%d allowed around %d on-time boundaries; the fixed window's boundary burst should exceed %d", allowed, onTime, limitOnly)
	}
	if least <= l {
		t.Fatalf("an identity had %d allowed around an on-time boundary (aims %+v); each should see its quota on both sides (> %d)", least, h.Meta.Aims, l)
	}
}

// rolledAstrideEpoch reports whether identity 0's first denial was
// followed by an allowed request with an epoch multiple of w between the
// last denial's sending and the allowed answer.
func rolledAstrideEpoch(h *history.History, w time.Duration) bool {
	var last *history.Record
	for i := range h.Len() {
		r := h.At(i)
		if r.Identity != 0 {
			continue
		}
		switch {
		case r.Outcome == decision.Denied:
			last = &r
		case r.Outcome == decision.Allowed && last != nil:
			lo, hi := h.Meta.Start.UnixNano()+int64(last.Sent), h.Meta.Start.UnixNano()+int64(r.Received)
			return (lo+int64(w)-1)/int64(w)*int64(w) <= hi
		}
	}
	return false
}

// A run just after another finds the first identity's window already
// open, opened before the run: its edge says nothing about alignment nor
// about when the run's probes opened the other identities' windows.
// Where that window ends on an epoch multiple, the old learning read
// epoch-aligned windows and aimed at edges no window rolled; where it
// ends half a window into the run, the other identities' windows opened
// half a window from the first's, and the aim claimed that spread. Both
// must settle on first-request edges the shots straddle.
func TestBoundaryLearnsPastAWindowOpenedBeforeTheRun(t *testing.T) {
	t.Parallel()
	const w = time.Second
	const l = 5
	for _, tt := range []struct {
		name string
		// start is where in an epoch window the run begins; the window
		// opened before the run ends half a window later.
		start time.Duration
	}{
		{"ending on an epoch multiple", w / 2},
		{"ending off one", w / 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			busy := calmtest.Retry(t, 3, func(int) string {
				lim := newWindowLimiter(l, w, 2)
				lim.noHints = true
				now := time.Now().UnixNano()
				time.Sleep(time.Duration((int64(w) + int64(tt.start) - now%int64(w)) % int64(w)))
				lim.state["user-0"] = &fixedWin{start: time.Now().Add(-w / 2), count: 2}
				plan := Plan{Pattern: workload.PatternBoundary, Align: workload.AlignAuto, Limit: rate.Limit{Count: l, Window: w}, Identities: 2,
					Duration: 5200 * time.Millisecond, MaxRequests: 100000}
				h, err := Run(context.Background(), lim, plan, RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(h.Meta.Aims) == 0 {
					t.Fatalf("no boundary aimed in %v", plan.Duration)
				}
				for i, a := range h.Meta.Aims {
					if a.How != workload.AlignFirstRequest {
						t.Fatalf("boundary %d aimed as %q (aims %+v); the target's windows open at a first request", i, a.How, h.Meta.Aims)
					}
					if a.Uncertainty < 0 || a.Uncertainty > h.Meta.BoundarySpan {
						t.Fatalf("boundary %d aimed to within %v, wider than the shots' ±%v (aims %+v)", i, a.Uncertainty, h.Meta.BoundarySpan, h.Meta.Aims)
					}
				}
				allowed, onTime, least := traffictest.BoundaryShape(t, h, 2, l)
				if onTime == 0 {
					return fmt.Sprintf("no boundary batch went out on time (aims %+v)", h.Meta.Aims)
				}
				requireBoundaryBurst(t, h, l, allowed, onTime, least)
				return ""
			})
			if busy != "" {
				t.Fatal("in three runs " + busy)
			}
		})
	}
}
