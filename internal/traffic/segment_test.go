package traffic

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/history"
)

func TestParseSegment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string // want: String() of the result, or the error's text
		ok       bool
	}{
		{"0/3", "0:1/3", true},
		{"2/3", "2/3:1", true},
		{"0:1/4", "0:1/4", true},
		{"1/4:2/4", "1/4:1/2", true},
		{"25%:50%", "1/4:1/2", true},
		{"0.5:1", "1/2:1", true},
		{" 1/2 : 1 ", "1/2:1", true},
		{"3/3", "want i/N with 0 ≤ i < N", false},
		{"-1/3", "want i/N with 0 ≤ i < N", false},
		{"1/0", "want i/N with 0 ≤ i < N", false},
		{"1/2:1/4", "want 0 ≤ from < to ≤ 1", false},
		{"0:3/2", "want 0 ≤ from < to ≤ 1", false},
		{"0:1e0", "is not a fraction", false},
		{"x:1", "is not a fraction", false},
		{"half", "want i/N", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, err := ParseSegment(tc.in)
			if tc.ok {
				if err != nil || s.String() != tc.want {
					t.Fatalf("ParseSegment(%q) = %v, %v; want %s", tc.in, s, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseSegment(%q) error %v; want one saying %q", tc.in, err, tc.want)
			}
		})
	}
}

func FuzzParseSegment(f *testing.F) {
	for _, s := range []string{"0/3", "1/4:2/4", "25%:50%", "0.5:1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seg, err := ParseSegment(s)
		if err != nil {
			return
		}
		back, err := ParseSegment(seg.String())
		if err != nil || back.From.Cmp(seg.From) != 0 || back.To.Cmp(seg.To) != 0 {
			t.Fatalf("%q read as %v, written %q, read back as %v, %v", s, seg, seg.String(), back, err)
		}
		lo, hi := seg.Block(1000)
		if lo < 0 || hi > 1000 || lo > hi {
			t.Fatalf("%q: block [%d, %d) of 1000", s, lo, hi)
		}
	})
}

// tiling returns the segments cut at the given points of [0, 1].
func tiling(cuts ...*big.Rat) []Segment {
	var out []Segment
	for i := 1; i < len(cuts); i++ {
		out = append(out, Segment{From: cuts[i-1], To: cuts[i]})
	}
	return out
}

// Segments that tile [0, 1) share every numbered thing out exactly once,
// each its fraction within one (Block), and every request exactly once,
// each its fraction within a few per thousand (Stripe).
func TestSegmentsTileExactly(t *testing.T) {
	t.Parallel()
	tilings := map[string][]Segment{
		"thirds":  tiling(big.NewRat(0, 1), big.NewRat(1, 3), big.NewRat(2, 3), big.NewRat(1, 1)),
		"uneven":  tiling(big.NewRat(0, 1), big.NewRat(1, 7), big.NewRat(1, 2), big.NewRat(9, 10), big.NewRat(1, 1)),
		"whole":   {Whole()},
		"halves":  tiling(big.NewRat(0, 1), big.NewRat(1, 2), big.NewRat(1, 1)),
		"sliver":  tiling(big.NewRat(0, 1), big.NewRat(1, 1000), big.NewRat(1, 1)),
		"quarter": tiling(big.NewRat(0, 1), big.NewRat(1, 4), big.NewRat(2, 4), big.NewRat(3, 4), big.NewRat(1, 1)),
	}
	for name, segs := range tilings {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, m := range []int{0, 1, 2, 3, 10, 97, 1000} {
				owner := make([]int, m)
				for i := range owner {
					owner[i] = -1
				}
				for k, s := range segs {
					lo, hi := s.Block(m)
					share, _ := new(big.Rat).Mul(new(big.Rat).Sub(s.To, s.From), big.NewRat(int64(m), 1)).Float64()
					if d := float64(hi-lo) - share; d <= -1 || d >= 1 {
						t.Fatalf("%v gets %d of %d; its share is %.2f", s, hi-lo, m, share)
					}
					for i := lo; i < hi; i++ {
						if owner[i] >= 0 {
							t.Fatalf("%d of %d in %v and %v", i, m, segs[owner[i]], s)
						}
						owner[i] = k
					}
				}
				if i := slices.Index(owner, -1); i >= 0 {
					t.Fatalf("%d of %d in no segment", i, m)
				}
			}
			const n = 100000
			got := make([]int, len(segs))
			stripes := make([]stripe, len(segs))
			for k, s := range segs {
				stripes[k] = s.stripe()
				if s.Stripe(7) != stripes[k].owns(7) {
					t.Fatalf("%v: Stripe and stripe disagree", s)
				}
			}
			for j := uint64(0); j < n; j++ {
				owners := 0
				for k, s := range stripes {
					if s.owns(j) {
						owners++
						got[k]++
					}
				}
				if owners != 1 {
					t.Fatalf("request %d has %d owners", j, owners)
				}
			}
			for k, s := range segs {
				share, _ := new(big.Rat).Sub(s.To, s.From).Float64()
				if d := float64(got[k]) - share*n; d < -20 || d > 20 {
					t.Fatalf("%v striped %d of %d; its share is %.0f", s, got[k], n, share*n)
				}
			}
		})
	}
}

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
		{"constant by requests", Plan{Rate: perSecond(400), Duration: 200 * time.Millisecond, MaxRequests: 1000, Identities: 2, SegmentBy: SegmentByRequests}},
		{"capped by max requests", Plan{Rate: perSecond(400), Duration: 200 * time.Millisecond, MaxRequests: 37, Identities: 4}},
		{"burst", Plan{Pattern: PatternBurst, Limit: perSecond(4), BurstSize: 3, Duration: 150 * time.Millisecond, MaxRequests: 1000, Identities: 3}},
		{"ramp by requests", Plan{Pattern: PatternRamp, Rate: perSecond(600), Duration: 200 * time.Millisecond, MaxRequests: 1000, Identities: 1, SegmentBy: SegmentByRequests}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := func(seg Segment) *history.History {
				p := tc.plan
				p.Segment = seg
				h, err := Run(context.Background(), newWindowLimiter(1000, time.Hour, 3), p, RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			whole := keys(run(Whole()))
			var union []key
			owner := map[string]string{}
			for i := range 3 {
				seg, _ := ParseSegment(fmt.Sprintf("%d/3", i))
				h := run(seg)
				if h.Meta.Segment != seg.String() {
					t.Fatalf("meta segment %q; want %q", h.Meta.Segment, seg)
				}
				if h.Len() == 0 {
					t.Fatalf("segment %v sent nothing", seg)
				}
				for _, k := range keys(h) {
					if o, ok := owner[k.identity]; ok && o != seg.String() && tc.plan.SegmentBy != SegmentByRequests {
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
	seg := func(s string) Segment {
		x, err := ParseSegment(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	t.Run("race", func(t *testing.T) {
		t.Parallel()
		p := Plan{Pattern: PatternRace, Limit: perSecond(3), Rounds: 4, Identities: 2, Duration: 2 * time.Second, MaxRequests: 1000, Segment: seg("1/2")}
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
		p := Plan{Model: ModelClosed, Concurrency: 4, Identities: 4, Duration: 100 * time.Millisecond, MaxRequests: 200, Segment: seg("1/2")}
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
		{"no client", Plan{Model: ModelClosed, Concurrency: 2, Identities: 4, Segment: seg("3/4")}, "none of the 2 clients"},
		{"race by requests", Plan{Pattern: PatternRace, Limit: perSecond(3), SegmentBy: SegmentByRequests, Segment: seg("0/2")}, "splits by identities only"},
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
		{"1/4", SegmentByRequests, 2_564},
	} {
		seg, err := ParseSegment(tc.seg)
		if err != nil {
			t.Fatal(err)
		}
		p := Plan{Pattern: PatternConstant, Model: ModelOpen, Rate: perSecond(1000), Duration: 10 * time.Second, MaxRequests: 1_000_000, Identities: len(names), Segment: seg, SegmentBy: tc.by}
		sh, err := shareOf(p, len(names))
		if err != nil {
			t.Fatal(err)
		}
		e := &engine{p: p, share: sh, names: names}
		if got := e.capacity(); got != tc.want {
			t.Errorf("segment %s %s: reserves %d records, want %d", tc.seg, tc.by, got, tc.want)
		}
		p.Model, p.Concurrency = ModelClosed, 4
		e.p = p
		if got := e.capacity(); got != 1<<16+64 {
			t.Errorf("closed model, segment %s: reserves %d, want %d", tc.seg, got, 1<<16+64)
		}
	}
}
