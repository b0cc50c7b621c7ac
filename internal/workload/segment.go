package workload

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Segment is one process's share of a plan that several processes run at
// once: the fraction [From, To) of the whole, k6's execution segment. The
// shares of segments that tile [0, 1) add up to the whole plan exactly:
// every identity, client and request belongs to exactly one of them, chosen
// by a rule every process computes alike (see Block and Stripe), so no
// process needs to hear of the others.
type Segment struct {
	From, To *big.Rat
}

// Whole is the segment of a process that runs the plan alone.
func Whole() Segment { return Segment{From: new(big.Rat), To: big.NewRat(1, 1)} }

// ParseSegment reads a segment: "i/N" is the i-th of N equal segments
// (0 ≤ i < N, as Kubernetes' JOB_COMPLETION_INDEX counts), and "a:b" the
// fraction from a to b, each a fraction, a decimal or a percentage, as k6's
// --execution-segment writes them ("0:1/4", "1/4:2/4", "25%:50%", "0.5:1").
// Unlike k6, a bare "1/4" is the second quarter, not the first.
func ParseSegment(s string) (Segment, error) {
	s = strings.TrimSpace(s)
	if from, to, ok := strings.Cut(s, ":"); ok {
		a, err := parseFraction(from)
		if err != nil {
			return Segment{}, fmt.Errorf("segment %q: %w", s, err)
		}
		b, err := parseFraction(to)
		if err != nil {
			return Segment{}, fmt.Errorf("segment %q: %w", s, err)
		}
		if a.Sign() < 0 || b.Cmp(big.NewRat(1, 1)) > 0 || a.Cmp(b) >= 0 {
			return Segment{}, fmt.Errorf("segment %q: want 0 ≤ from < to ≤ 1", s)
		}
		return Segment{From: a, To: b}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Segment{}, fmt.Errorf("segment %q: want i/N (the i-th of N, from 0) or from:to (like 0:1/4)", s)
	}
	i, err1 := strconv.ParseInt(is, 10, 64)
	n, err2 := strconv.ParseInt(ns, 10, 64)
	if err1 != nil || err2 != nil || n <= 0 || i < 0 || i >= n {
		return Segment{}, fmt.Errorf("segment %q: want i/N with 0 ≤ i < N", s)
	}
	return Segment{From: big.NewRat(i, n), To: big.NewRat(i+1, n)}, nil
}

func parseFraction(s string) (*big.Rat, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	s = strings.TrimSuffix(s, "%")
	r, ok := new(big.Rat).SetString(s)
	if !ok || s == "" || strings.ContainsAny(s, "eE") {
		return nil, fmt.Errorf("%q is not a fraction, a decimal or a percentage", s)
	}
	if pct {
		r.Quo(r, big.NewRat(100, 1))
	}
	return r, nil
}

// IsWhole reports whether s is the whole plan ([0, 1), or the zero
// Segment).
func (s Segment) IsWhole() bool {
	return s.From == nil || (s.From.Sign() == 0 && s.To.Cmp(big.NewRat(1, 1)) == 0)
}

// String writes s as ParseSegment reads it back ("1/3:2/3").
func (s Segment) String() string {
	if s.From == nil {
		return "0:1"
	}
	return s.From.RatString() + ":" + s.To.RatString()
}

// Block is s's share of m numbered things (identities, clients): those
// from lo to hi−1, where lo = ⌊From·m⌋ and hi = ⌊To·m⌋. Segments that tile
// [0, 1) get disjoint blocks that together hold all m, and each holds its
// fraction of m within one.
func (s Segment) Block(m int) (lo, hi int) {
	if s.From == nil {
		return 0, m
	}
	return floorTimes(s.From, m), floorTimes(s.To, m)
}

func floorTimes(r *big.Rat, m int) int {
	n := new(big.Int).Mul(r.Num(), big.NewInt(int64(m)))
	return int(n.Quo(n, r.Denom()).Int64()) // both non-negative: Quo is the floor
}

// golden is 2⁶⁴ divided by the golden ratio: j·golden mod 2⁶⁴ spreads
// j = 0, 1, 2 … over [0, 2⁶⁴) as evenly as any sequence can (the
// three-gap theorem), so a stripe of it takes its fraction of any run of
// consecutive numbers, to within a few.
const golden = 0x9E3779B97F4A7C15

// Stripe reports whether s owns member j of an endless sequence (the
// requests of an identity split across segments): the point j·φ⁻¹ mod 1
// falls in [From, To). Every j has one owner among segments that tile
// [0, 1), and s owns its fraction of any long enough run of j.
func (s Segment) Stripe(j uint64) bool {
	return s.Striped().Owns(j)
}

// stripeBounds are From and To scaled to 2⁶⁴ (all: To is 1).
func (s Segment) stripeBounds() (lo, hi uint64, all bool) {
	if s.From == nil {
		return 0, 0, true
	}
	scale := func(r *big.Rat) uint64 {
		n := new(big.Int).Lsh(r.Num(), 64)
		return n.Quo(n, r.Denom()).Uint64() // r < 1 here, so it fits
	}
	all = s.To.Cmp(big.NewRat(1, 1)) == 0
	if !all {
		hi = scale(s.To)
	}
	return scale(s.From), hi, all
}

// Striped is Stripe with its bounds computed once, for a producer's loop.
type Striped struct {
	lo, hi uint64
	all    bool
}

// Striped is s's Stripe, ready to ask for many j.
func (s Segment) Striped() Striped {
	lo, hi, all := s.stripeBounds()
	return Striped{lo, hi, all}
}

// Owns is Segment.Stripe(j).
func (st Striped) Owns(j uint64) bool {
	x := j * golden
	return x >= st.lo && (st.all || x < st.hi)
}
