package score

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// Tiling is how the segments of a merge cover the plan.
type Tiling struct {
	// Missing are the shares of the plan no segment sent ("1/2:1").
	Missing []string
	// Twice names pairs of segments that sent the same share of the plan:
	// the same run given twice, a copy of it, or two runs of overlapping
	// segments.
	Twice []string
}

// Tile says how segs cover the plan [0, 1): exactly once when both of
// its lists are empty.
func Tile(segs []Segment) Tiling {
	type span struct {
		from, to *big.Rat
		name     string
	}
	spans := make([]span, 0, len(segs))
	for _, s := range segs {
		from, to := s.From, s.To
		if from == nil || to == nil {
			from, to = new(big.Rat), big.NewRat(1, 1)
		}
		spans = append(spans, span{from, to, segmentName(s)})
	}
	slices.SortStableFunc(spans, func(a, b span) int { return a.from.Cmp(b.from) })
	var t Tiling
	at, one := new(big.Rat), big.NewRat(1, 1)
	last := ""
	for _, s := range spans {
		switch c := s.from.Cmp(at); {
		case c > 0:
			t.Missing = append(t.Missing, share(at, s.from))
		case c < 0:
			t.Twice = append(t.Twice, fmt.Sprintf("%s and %s", last, s.name))
		}
		if s.to.Cmp(at) > 0 {
			at, last = s.to, s.name
		}
	}
	if at.Cmp(one) < 0 {
		t.Missing = append(t.Missing, share(at, one))
	}
	return t
}

// share names the part of the plan from a to b as a segment flag would.
func share(a, b *big.Rat) string { return a.RatString() + ":" + b.RatString() }

// String is the tiling's gaps joined, for Merge.Missing.
func (t Tiling) String() string { return strings.Join(t.Missing, ", ") }
