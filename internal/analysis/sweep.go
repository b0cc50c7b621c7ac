package analysis

import "sort"

// The window figures reduce to one question about intervals. A request
// decided at an unknown instant d in [s, r] lies in the window [t, t+W):
//
//   - for sure (definitely) when s >= t and r < t+W, i.e. t in (r-W, s];
//   - possibly when s < t+W and r >= t, i.e. t in (s-W, r].
//
// So "the most allowed in any window" is the largest number of these
// t-intervals that share a point: the ceiling uses the definite ones, the
// upper bound the possible ones. Times are integer nanoseconds, so (a, b]
// is the closed [a+1, b]. When d is known, s = r = d and both intervals are
// (d-W, d], so the two bounds meet.

// maxOverlap returns the largest number of closed intervals [starts[i]+shift,
// ends[j]] holding one point t with lo <= t <= hi. starts and ends must be
// sorted ascending and pair up into non-empty intervals (the k-th smallest
// start need not belong with the k-th smallest end: the count at any t is
// #{start <= t} - #{end < t} whatever the pairing, as long as no interval
// is empty). The maximum is reached at lo or at some start, so a merge of
// the two sorted lists finds it in O(n).
func maxOverlap(starts []int64, shift int64, ends []int64, lo, hi int64) int {
	if len(starts) == 0 || lo > hi {
		return 0
	}
	// Count at t = lo.
	i := sort.Search(len(starts), func(k int) bool { return starts[k]+shift > lo })
	j := sort.Search(len(ends), func(k int) bool { return ends[k] >= lo })
	best := i - j
	for i < len(starts) {
		t := starts[i] + shift
		if t > hi {
			break
		}
		for i < len(starts) && starts[i]+shift <= t {
			i++
		}
		for j < len(ends) && ends[j] < t {
			j++
		}
		best = max(best, i-j)
	}
	return best
}

const (
	minTime = -1 << 63
	maxTime = 1<<63 - 1
)

// ceilingBounds returns the definite and possible most-allowed counts over
// windows [t, t+w) with t in [lo, hi]. sent and recv are the allowed
// requests' interval starts and ends, each sorted on its own; defSent and
// defRecv are the same for the requests whose interval is shorter than w
// (a longer one is never definitely inside a window, and would make an
// empty interval that maxOverlap must not see).
//
// Definite: intervals [r-w+1, s]: starts from defRecv, ends from defSent.
// Possible: intervals [s-w+1, r]: starts from sent, ends from recv.
func ceilingBounds(sent, recv, defSent, defRecv []int64, w int64, lo, hi int64) (lower, upper int) {
	lower = maxOverlap(defRecv, 1-w, defSent, lo, hi)
	upper = maxOverlap(sent, 1-w, recv, lo, hi)
	return lower, upper
}
