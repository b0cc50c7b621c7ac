package workload

import (
	"math/big"
	"slices"
	"strings"
	"testing"
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
			stripes := make([]Striped, len(segs))
			for k, s := range segs {
				stripes[k] = s.Striped()
				if s.Stripe(7) != stripes[k].Owns(7) {
					t.Fatalf("%v: Stripe and Striped disagree", s)
				}
			}
			for j := uint64(0); j < n; j++ {
				owners := 0
				for k, s := range stripes {
					if s.Owns(j) {
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
