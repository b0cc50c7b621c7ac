package analysis

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
// the two sorted sequences finds it in one pass. It consumes the cursors.
func maxOverlap(starts *cursor, shift int64, ends *cursor, lo, hi int64) int {
	if _, ok := starts.peek(); !ok || lo > hi {
		return 0
	}
	// Count at t = lo.
	i := starts.skipWhile(func(v int64) bool { return v+shift <= lo })
	j := ends.skipWhile(func(v int64) bool { return v < lo })
	best := i - j
	for {
		v, ok := starts.peek()
		if !ok || v+shift > hi {
			break
		}
		t := v + shift
		for ok && v+shift <= t {
			starts.i++
			i++
			v, ok = starts.peek()
		}
		for e, ok := ends.peek(); ok && e < t; e, ok = ends.peek() {
			ends.i++
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

// intervals is one identity's allowed requests as sorted sequences: the
// starts (sent) and ends (recv) of their [Sent, Received] intervals, each
// sorted on its own, and the same for the long ones (an interval of w or
// more, never definitely inside a window: it would make an empty interval
// that maxOverlap must not see). Each call returns fresh cursors.
type intervals struct {
	sent, recv         func() *cursor
	longSent, longRecv func() *cursor
	long               int
}

// definite is the most allowed surely inside one window [t, t+w), t in
// [lo, hi]: intervals [r-w+1, s] of the intervals shorter than w, starts
// from their recv, ends from their sent. The possible count
// (worker.upperCeiling) takes intervals [s-w+1, r]: starts from sent,
// ends from recv.
func definite(iv intervals, w int64, lo, hi int64) int {
	defSent, defRecv := iv.sent(), iv.recv()
	if iv.long > 0 {
		defSent, defRecv = diffCursor(defSent, iv.longSent()), diffCursor(defRecv, iv.longRecv())
	}
	return maxOverlap(defRecv, 1-w, defSent, lo, hi)
}
