package traffic

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/workload"
)

// key is what identifies a request of a plan, whoever sent it.
type key struct {
	intended time.Duration
	identity string
	gateway  uint16
}

func keys(h *history.History) []key {
	var out []key
	for i := range h.Len() {
		r := h.At(i)
		out = append(out, key{r.Intended, h.Meta.Identities[r.Identity], r.Gateway})
	}
	sortKeys(out)
	return out
}

func sortKeys(ks []key) {
	slices.SortFunc(ks, func(a, b key) int {
		if a.intended != b.intended {
			return int(a.intended - b.intended)
		}
		if c := strings.Compare(a.identity, b.identity); c != 0 {
			return c
		}
		return int(a.gateway) - int(b.gateway)
	})
}

// The segments of a plan, run separately, send exactly the requests the
// whole plan sends (same instant, identity and gateway), each once; by
// identities no identity is sent from two segments.
func TestSegmentsSendTheWholePlanOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		plan Plan
	}{
		{"constant by identities", Plan{Rate: perSecond(400), Duration: 200 * time.Millisecond, MaxRequests: 1000, Identities: 5}},
		{"constant by requests", Plan{Rate: perSecond(400), Duration: 200 * time.Millisecond, MaxRequests: 1000, Identities: 2, SegmentBy: workload.SegmentByRequests}},
		{"capped by max requests", Plan{Rate: perSecond(400), Duration: 200 * time.Millisecond, MaxRequests: 37, Identities: 4}},
		{"burst", Plan{Pattern: workload.PatternBurst, Limit: perSecond(4), BurstSize: 3, Duration: 150 * time.Millisecond, MaxRequests: 1000, Identities: 3}},
		{"ramp by requests", Plan{Pattern: workload.PatternRamp, Rate: perSecond(600), Duration: 200 * time.Millisecond, MaxRequests: 1000, Identities: 1, SegmentBy: workload.SegmentByRequests}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := func(seg workload.Segment) *history.History {
				p := tc.plan
				p.Segment = seg
				h, err := Run(context.Background(), newWindowLimiter(1000, time.Hour, 3), p, RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			whole := keys(run(workload.Whole()))
			var union []key
			owner := map[string]string{}
			for i := range 3 {
				seg, _ := workload.ParseSegment(fmt.Sprintf("%d/3", i))
				h := run(seg)
				if h.Meta.Segment != seg.String() {
					t.Fatalf("meta segment %q; want %q", h.Meta.Segment, seg)
				}
				if h.Len() == 0 {
					t.Fatalf("segment %v sent nothing", seg)
				}
				for _, k := range keys(h) {
					if o, ok := owner[k.identity]; ok && o != seg.String() && tc.plan.SegmentBy != workload.SegmentByRequests {
						t.Fatalf("identity %s sent from %s and %s", k.identity, o, seg)
					}
					owner[k.identity] = seg.String()
					union = append(union, k)
				}
			}
			sortKeys(union)
			if !slices.Equal(union, whole) {
				t.Fatalf("the segments sent %d requests, the whole plan %d, not the same ones", len(union), len(whole))
			}
		})
	}
}

// Race rounds and closed-model clients are shared by whole identities,
// and a segment that would get none of them is refused.
func TestSegmentShares(t *testing.T) {
	t.Parallel()
	seg := func(s string) workload.Segment {
		x, err := workload.ParseSegment(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	t.Run("race", func(t *testing.T) {
		t.Parallel()
		p := Plan{Pattern: workload.PatternRace, Limit: perSecond(3), Rounds: 4, Identities: 2, Duration: 2 * time.Second, MaxRequests: 1000, Segment: seg("1/2")}
		h, err := Run(context.Background(), newWindowLimiter(3, time.Hour, 2), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range h.Len() {
			if name := h.Meta.Identities[h.At(i).Identity]; name < "race-2-" {
				t.Fatalf("segment 1/2 of 4 rounds sent %s; want rounds 2 and 3 only", name)
			}
		}
		if h.Meta.Rounds != 2 {
			t.Fatalf("%d rounds; want 2", h.Meta.Rounds)
		}
	})
	t.Run("closed", func(t *testing.T) {
		t.Parallel()
		p := Plan{Model: workload.ModelClosed, Concurrency: 4, Identities: 4, Duration: 100 * time.Millisecond, MaxRequests: 200, Segment: seg("1/2")}
		h, err := Run(context.Background(), newWindowLimiter(1000, time.Hour, 1), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h.Len() != 100 {
			t.Fatalf("%d requests; want half of max_requests, 100", h.Len())
		}
		for i := range h.Len() {
			if id := h.At(i).Identity; id != 2 && id != 3 {
				t.Fatalf("segment 1/2 sent for identity %d; want 2 and 3 only", id)
			}
		}
	})
	for _, tc := range []struct {
		name string
		plan Plan
		want string
	}{
		{"no identity", Plan{Rate: perSecond(10), Identities: 2, Segment: seg("0/3")}, "gets none of the 2 identities"},
		{"no client", Plan{Model: workload.ModelClosed, Concurrency: 2, Identities: 4, Segment: seg("3/4")}, "none of the 2 clients"},
		{"race by requests", Plan{Pattern: workload.PatternRace, Limit: perSecond(3), SegmentBy: workload.SegmentByRequests, Segment: seg("0/2")}, "splits by identities only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.plan.Duration, tc.plan.MaxRequests = time.Second, 100
			_, err := Run(context.Background(), newWindowLimiter(1, time.Hour, 1), tc.plan, RunOptions{})
			if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want an invalid plan saying %q", err, tc.want)
			}
		})
	}
}

// A common start: the run's clock starts at StartAt, read on the clock
// RunOptions.Now gives; a late run says how late, and one late by its
// whole duration sends nothing.
func TestStartAt(t *testing.T) {
	t.Parallel()
	plan := Plan{Rate: perSecond(100), Duration: 100 * time.Millisecond, MaxRequests: 1000}
	t.Run("on time", func(t *testing.T) {
		t.Parallel()
		skew := -time.Hour // this machine's clock is an hour behind
		now := func() time.Time { return time.Now().Add(skew) }
		before := time.Now() // first: at is then at least 150ms after it
		at := now().Add(150 * time.Millisecond)
		h, err := Run(context.Background(), newWindowLimiter(1000, time.Hour, 1), plan, RunOptions{StartAt: at, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if waited := h.Meta.Start.Sub(before.Add(skew)); waited < 150*time.Millisecond {
			t.Fatalf("started %v after the call; want at StartAt, 150ms", waited)
		}
		if d := h.Meta.Start.Sub(at); d < 0 || d > 50*time.Millisecond || h.Meta.Late > 50*time.Millisecond {
			t.Fatalf("Meta.Start %v is %v from StartAt, Late %v", h.Meta.Start, d, h.Meta.Late)
		}
	})
	t.Run("late", func(t *testing.T) {
		t.Parallel()
		h, err := Run(context.Background(), newWindowLimiter(1000, time.Hour, 1), plan, RunOptions{StartAt: time.Now().Add(-30 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		if h.Meta.Late < 30*time.Millisecond || h.Len() == 0 {
			t.Fatalf("late %v with %d records; want at least 30ms late, and the run made", h.Meta.Late, h.Len())
		}
	})
	t.Run("too late", func(t *testing.T) {
		t.Parallel()
		h, err := Run(context.Background(), newWindowLimiter(1000, time.Hour, 1), plan, RunOptions{StartAt: time.Now().Add(-time.Second)})
		if !errors.Is(err, ErrLate) || h != nil {
			t.Fatalf("Run = %v, %v; want no history and ErrLate", h, err)
		}
	})
}

// TestLateRunLeavesNothing: a run that never starts (too late for the
// common start) stops its collector and its history's spill writer before
// it returns. Not parallel: it counts the package's goroutines.
func TestLateRunLeavesNothing(t *testing.T) {
	count := func(fn string) int {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), fn)
	}
	const collector, writer = "traffic.(*engine).collect", "history.(*spill).write"
	collectors, writers := count(collector), count(writer)
	plan := Plan{Rate: perSecond(100), Duration: 100 * time.Millisecond, MaxRequests: 1000}
	h, err := Run(context.Background(), newWindowLimiter(1000, time.Hour, 1), plan, RunOptions{
		StartAt: time.Now().Add(-time.Second), KeepInMemory: 10, SpillDir: t.TempDir(),
	})
	if !errors.Is(err, ErrLate) || h != nil {
		t.Fatalf("Run = %v, %v; want no history and ErrLate", h, err)
	}
	// A goroutine told to stop may still be on its way out.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if count(collector) == collectors && count(writer) == writers {
			return
		}
	}
	t.Fatalf("after the late run: %d collectors and %d spill writers; want %d and %d as before",
		count(collector), count(writer), collectors, writers)
}

// TestSegmentReservesItsShare: a segment reserves history for its share
// of the plan's requests, not for the whole plan (10,000 requests here);
// the closed model reserves the same modest start either way.
func TestSegmentReservesItsShare(t *testing.T) {
	t.Parallel()
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, tc := range []struct {
		seg  string
		by   string
		want int
	}{
		{"0:1", "", 10_064},
		{"1/4", "", 2_564}, // 2 of the 8 identities
		{"0:3/8", "", 3_814},
		{"1/4", workload.SegmentByRequests, 2_564},
	} {
		seg, err := workload.ParseSegment(tc.seg)
		if err != nil {
			t.Fatal(err)
		}
		p := Plan{Pattern: workload.PatternConstant, Model: workload.ModelOpen, Rate: perSecond(1000), Duration: 10 * time.Second, MaxRequests: 1_000_000, Identities: len(names), Segment: seg, SegmentBy: tc.by}
		sh, err := shareOf(p, len(names))
		if err != nil {
			t.Fatal(err)
		}
		e := &engine{p: p, share: sh, names: names}
		if got := e.capacity(); got != tc.want {
			t.Errorf("segment %s %s: reserves %d records, want %d", tc.seg, tc.by, got, tc.want)
		}
		p.Model, p.Concurrency = workload.ModelClosed, 4
		e.p = p
		if got := e.capacity(); got != 1<<16+64 {
			t.Errorf("closed model, segment %s: reserves %d, want %d", tc.seg, got, 1<<16+64)
		}
	}
}
