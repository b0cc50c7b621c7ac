package analysis

// The token-bucket envelope. A bucket of capacity b refilled at rate r
// admits a sequence of requests at times t_0 <= t_1 <= ... (starting full)
// exactly when every run of them satisfies
//
//	(j - i + 1) <= b + r*(t_j - t_i)   for all i <= j.
//
// So given the allowed times and a rate, the smallest capacity that explains
// them is the largest left-hand side minus r*(t_j - t_i): burst. Note what
// this says about a token bucket of capacity L refilled at L per W: it
// admits up to 2L-1 in one sliding window of W (a full bucket, then the
// refill during the window). That is its envelope, not a leak; the ceiling
// of such a design is 2L-1 by construction.

// sustainedRate is the long-run allowed rate in requests per second: the
// allowed (n decision times, sorted, read by times) after the run's first
// window, over the length of that part, [start+w, end]. The run lasts two
// windows at least (end-start >= 2w, w > 0): a shorter one has no rate
// apart from its first burst.
func sustainedRate(times *cursor, n int, start, end, w int64) float64 {
	from := start + w
	k := times.skipWhile(func(t int64) bool { return t < from })
	return float64(n-k) / (float64(end-from) / 1e9)
}

// burstFor is the smallest capacity b such that every [t_i, t_j] of the
// sorted times saw at most b + rate*(t_j - t_i) allowed (rate per second):
// max over i <= j of (j-i+1) - rate*(t_j - t_i), in one pass keeping the
// best (rate*t_i - i) seen so far. 0 for no requests.
func burstFor(times *cursor, rate float64) float64 {
	t0, ok := times.peek()
	if !ok {
		return 0
	}
	perNs := rate / 1e9
	// Offsets from t0 keep the products small and exact enough.
	best := 0.0
	bestStart := 0.0 // max over i <= j of perNs*(t_i-t0) - i
	for j := 0; ; j++ {
		t, ok := times.next()
		if !ok {
			break
		}
		x := perNs * float64(t-t0)
		if v := x - float64(j); j == 0 || v > bestStart {
			bestStart = v
		}
		if v := float64(j+1) - x + bestStart; v > best {
			best = v
		}
	}
	return best
}

// slipEps absorbs float rounding in token arithmetic, so a request landing
// exactly when a token is due is admitted.
const slipEps = 1e-9

// slipped replays the sorted allowed times through a token bucket of
// capacity burst refilled at rate per second, starting full; a request the
// bucket must refuse is counted and does not spend a token (the limiter
// admitted it, but a correct one of this envelope would not have).
func slipped(times *cursor, burst, rate float64) int {
	last, ok := times.peek()
	if !ok {
		return 0
	}
	perNs := rate / 1e9
	tokens := burst
	n := 0
	for t, ok := times.next(); ok; t, ok = times.next() {
		tokens = min(burst, tokens+perNs*float64(t-last))
		last = t
		if tokens >= 1-slipEps {
			tokens--
		} else {
			n++
		}
	}
	return n
}
