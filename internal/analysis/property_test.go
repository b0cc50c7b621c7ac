package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// The property tests build small random histories where every allowed
// request has a true decision instant d, hidden inside a random
// [Sent, Received] around it (or revealed as Decided), and check Analyze
// against direct counting from the definitions.

type truth struct {
	h *history.History
	// d[i] is record i's true decision instant.
	d []int64
}

func randomRun(rng *rand.Rand) truth {
	w := time.Duration(1+rng.IntN(50)) * time.Millisecond
	meta := history.Meta{
		Scenario:   "prop",
		Limit:      rate.Limit{Count: int64(1 + rng.IntN(8)), Window: w},
		Identities: []string{"a", "b", "c"}[:1+rng.IntN(3)],
		Gateways:   []string{"g0", "g1"},
	}
	span := time.Duration(rng.Int64N(int64(6 * w)))
	if rng.IntN(2) == 0 {
		for range 1 + rng.IntN(3) {
			meta.Boundaries = append(meta.Boundaries, time.Duration(rng.Int64N(int64(span)+1)))
		}
		meta.BoundarySpan = time.Duration(rng.Int64N(int64(w)))
	}
	if rng.IntN(2) == 0 {
		meta.Rounds = 1 + rng.IntN(4)
	}
	if rng.IntN(2) == 0 {
		for range 1 + rng.IntN(2) {
			meta.Faults = append(meta.Faults, history.Fault{At: time.Duration(rng.Int64N(int64(span) + 1)), For: time.Duration(rng.Int64N(int64(w))), Action: "redis-down"})
		}
	}
	n := rng.IntN(40)
	h := history.New(meta, n)
	tr := truth{h: h}
	// A coarse grid sometimes, so exact ties and window-edge coincidences
	// happen often.
	grid := int64(1)
	if rng.IntN(2) == 0 {
		grid = int64(w) / int64(1+rng.IntN(4))
	}
	for range n {
		d := rng.Int64N(int64(span)+1) / grid * grid
		before := rng.Int64N(int64(w)) / grid * grid
		after := rng.Int64N(int64(w)*3/2) / grid * grid
		r := history.Record{
			Intended:   time.Duration(d - before - rng.Int64N(1000)),
			Sent:       time.Duration(d - before),
			Received:   time.Duration(d + after),
			Decided:    history.NoTime,
			RetryAfter: history.NoTime,
			Identity:   uint32(rng.IntN(len(meta.Identities))),
			Round:      history.NoRound,
			Gateway:    uint16(rng.IntN(2)),
			Outcome:    decision.Outcome(1 + rng.IntN(4)),
			By:         decision.By(rng.IntN(7)),
		}
		if rng.IntN(4) == 0 {
			r.Decided = time.Duration(d)
		}
		if meta.Rounds > 0 && rng.IntN(3) > 0 {
			r.Round = int32(rng.IntN(meta.Rounds))
		}
		if r.Outcome == decision.Denied && rng.IntN(2) == 0 {
			r.RetryAfter = time.Duration(rng.Int64N(int64(w)))
		}
		h.Append(r)
		tr.d = append(tr.d, d)
	}
	return tr
}

// allowedOf returns identity k's allowed record indices.
func allowedOf(h *history.History, k int) []int {
	var out []int
	for i := range h.Len() {
		if int(h.Identity(i)) == k && h.Outcome(i) == decision.Allowed {
			out = append(out, i)
		}
	}
	return out
}

func bruteInterval(r history.Record) (int64, int64) {
	if r.Decided != history.NoTime {
		return int64(r.Decided), int64(r.Decided)
	}
	return int64(r.Sent), int64(r.Received)
}

// bruteCeiling counts, for every t where a count can change (and its
// neighbours), the allowed surely / possibly inside [t, t+w), t in [lo, hi].
func bruteCeiling(ivs [][2]int64, w, lo, hi int64) (lower, upper int) {
	var cands []int64
	add := func(t int64) {
		for _, x := range []int64{t - 1, t, t + 1} {
			if x >= lo && x <= hi {
				cands = append(cands, x)
			}
		}
	}
	add(lo)
	add(hi)
	for _, iv := range ivs {
		s, r := iv[0], iv[1]
		for _, t := range []int64{s, r, s - w, r - w} {
			add(t)
		}
	}
	for _, t := range cands {
		def, pos := 0, 0
		for _, iv := range ivs {
			s, r := iv[0], iv[1]
			if s >= t && r < t+w {
				def++
			}
			if s < t+w && r >= t {
				pos++
			}
		}
		lower, upper = max(lower, def), max(upper, pos)
	}
	return lower, upper
}

func intervalsOf(h *history.History, idx []int) [][2]int64 {
	var out [][2]int64
	for _, i := range idx {
		s, r := bruteInterval(h.At(i))
		out = append(out, [2]int64{s, r})
	}
	return out
}

// trueSliding is the most true decision instants in any [t, t+w).
func trueSliding(d []int64, idx []int, w int64) int {
	best := 0
	for _, i := range idx {
		c := 0
		for _, j := range idx {
			if d[j] >= d[i] && d[j] < d[i]+w {
				c++
			}
		}
		best = max(best, c)
	}
	return best
}

func bruteDecisionTimes(h *history.History, idx []int) []int64 {
	var ts []int64
	for _, i := range idx {
		s, r := bruteInterval(h.At(i))
		ts = append(ts, s+(r-s)/2)
	}
	slices.Sort(ts)
	return ts
}

func bruteBurst(ts []int64, ratePerSec float64) float64 {
	best := 0.0
	for i := range ts {
		for j := i; j < len(ts); j++ {
			best = max(best, float64(j-i+1)-ratePerSec*float64(ts[j]-ts[i])/1e9)
		}
	}
	return best
}

// bruteSlipped admits a request when the admitted sequence with it still
// fits the (b, r) envelope over every run ending at it - the definition of
// a token bucket that starts full - and counts the rest.
func bruteSlipped(ts []int64, b, ratePerSec float64) int {
	var admitted []int64
	n := 0
	for _, t := range ts {
		ok := true
		for i := range admitted {
			count := float64(len(admitted) - i + 1)
			if count > b+ratePerSec*float64(t-admitted[i])/1e9+slipEps {
				ok = false
				break
			}
		}
		if ok && b < 1-slipEps {
			ok = false
		}
		if ok {
			admitted = append(admitted, t)
		} else {
			n++
		}
	}
	return n
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*max(1, math.Abs(a), math.Abs(b)) }

func TestAnalyzeMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(42, 7))
	iterations := 2000
	if raceEnabled {
		iterations = 300
	}
	for iter := range iterations {
		tr := randomRun(rng)
		h := tr.h
		opts := Options{}
		if rng.IntN(3) == 0 {
			opts.EnvelopeBurst = float64(1 + rng.IntN(5))
			opts.EnvelopeRate = float64(rng.IntN(2000))
		}
		res := analyzed(t, h, opts)
		// The path for big identities (two gathers, parallel sorts) must
		// agree with the one for small ones.
		if big := mustAnalyze(t, h, opts, 1, spillBudget); !reflect.DeepEqual(big.PerIdentity, res.PerIdentity) || !reflect.DeepEqual(big.Sliding, res.Sliding) || !reflect.DeepEqual(big.Timeline, res.Timeline) {
			t.Fatalf("iteration %d: big-identity path differs:\n%+v\n%+v", iter, big.PerIdentity, res.PerIdentity)
		}
		w := int64(h.Meta.Limit.Window)
		l := float64(h.Meta.Limit.Count)
		start, end := int64(math.MaxInt64), int64(math.MinInt64)
		for i := range h.Len() {
			start = min(start, int64(h.Intended(i)))
			end = max(end, int64(h.Intended(i)))
			if h.Outcome(i) != decision.Dropped { // a dropped request never ran
				end = max(end, int64(h.Received(i)))
			}
		}
		fail := func(k int, format string, args ...any) {
			t.Helper()
			t.Fatalf("iteration %d, identity %d: %s\nmeta %+v\nrecords %v", iter, k, fmt.Sprintf(format, args...), h.Meta, records(h))
		}
		worstCeiling := 0.0
		totalSlipped, totalRace := 0.0, 0.0
		for k := range h.Meta.Identities {
			m := res.PerIdentity[k].Metrics
			idx := allowedOf(h, k)
			ivs := intervalsOf(h, idx)
			lower, upper := bruteCeiling(ivs, w, math.MinInt64/4, math.MaxInt64/4)
			if m[metric.Ceiling] != float64(lower) || m[metric.CeilingUpper] != float64(upper) {
				fail(k, "ceiling = [%v, %v], brute force [%d, %d]", m[metric.Ceiling], m[metric.CeilingUpper], lower, upper)
			}
			if truth := trueSliding(tr.d, idx, w); float64(truth) < m[metric.Ceiling] || float64(truth) > m[metric.CeilingUpper] {
				fail(k, "true sliding max %d outside [%v, %v]", truth, m[metric.Ceiling], m[metric.CeilingUpper])
			}
			if !near(m[metric.CeilingRatio], float64(lower)/l) {
				fail(k, "ceiling_ratio %v, want %v", m[metric.CeilingRatio], float64(lower)/l)
			}
			worstCeiling = max(worstCeiling, m[metric.Ceiling])

			ts := bruteDecisionTimes(h, idx)
			var rate float64
			switch span := end - start; {
			case span < 2*w:
				// No window after the first: no long-run rate, no burst.
				for _, name := range []string{metric.SustainedRate, metric.Burst} {
					if v, ok := m[name]; ok {
						fail(k, "%s %v in a run of %v, under two windows", name, v, time.Duration(span))
					}
				}
			case len(ts) == 0:
			default:
				c := 0
				for _, x := range ts {
					if x >= start+w {
						c++
					}
				}
				rate = float64(c) / (float64(end-start-w) / 1e9)
			}
			if end-start >= 2*w && !near(m[metric.SustainedRate], rate) {
				fail(k, "sustained_rate %v, want %v", m[metric.SustainedRate], rate)
			}
			if want := bruteBurst(ts, rate); end-start >= 2*w && !near(m[metric.Burst], want) {
				fail(k, "burst %v, want %v", m[metric.Burst], want)
			}
			eb, er := opts.EnvelopeBurst, opts.EnvelopeRate
			if eb == 0 && er == 0 {
				eb, er = l, l/(float64(w)/1e9)
			}
			// Decision times are only known within their intervals: the
			// envelope gets the widest interval's worth of refill as slack.
			var widest int64
			for _, i := range idx {
				s, r := bruteInterval(h.At(i))
				widest = max(widest, r-s)
			}
			eb += er * float64(widest) / 1e9
			if want := bruteSlipped(ts, eb, er); m[metric.Slipped] != float64(want) {
				fail(k, "slipped %v, want %d (envelope %v, %v/s)", m[metric.Slipped], want, eb, er)
			}
			totalSlipped += m[metric.Slipped]

			if len(h.Meta.Boundaries) > 0 {
				// Surely inside a boundary's span, possibly inside it, and
				// truly decided inside it.
				best, bestUpper, bestTrue := 0, 0, 0
				for _, b := range h.Meta.Boundaries {
					from, to := int64(b-h.Meta.BoundarySpan), int64(b+h.Meta.BoundarySpan)
					c, cu, ct := 0, 0, 0
					for j, iv := range ivs {
						s, r := iv[0], iv[1]
						if s >= from && r <= to {
							c++
						}
						if s <= to && r >= from {
							cu++
						}
						if d := tr.d[idx[j]]; d >= from && d <= to {
							ct++
						}
					}
					best, bestUpper, bestTrue = max(best, c), max(bestUpper, cu), max(bestTrue, ct)
				}
				if m[metric.BoundaryAllowed] != float64(best) || m[metric.BoundaryAllowedUpper] != float64(bestUpper) {
					fail(k, "boundary_allowed [%v, %v], want [%d, %d]", m[metric.BoundaryAllowed], m[metric.BoundaryAllowedUpper], best, bestUpper)
				}
				if float64(bestTrue) < m[metric.BoundaryAllowed] || float64(bestTrue) > m[metric.BoundaryAllowedUpper] {
					fail(k, "true boundary count %d outside [%v, %v]", bestTrue, m[metric.BoundaryAllowed], m[metric.BoundaryAllowedUpper])
				}
			} else if _, ok := m[metric.BoundaryAllowed]; ok {
				fail(k, "boundary_allowed present without boundaries")
			} else if _, ok := m[metric.BoundaryAllowedUpper]; ok {
				fail(k, "boundary_allowed_upper present without boundaries")
			}

			rounds := map[int32]int{}
			for _, i := range idx {
				if r := h.Round(i); r >= 0 {
					rounds[r]++
				}
			}
			excess := 0
			for _, c := range rounds {
				excess += max(0, c-1)
			}
			if h.Meta.Rounds > 0 && m[metric.RaceExcess] != float64(excess) {
				fail(k, "race_excess %v, want %d", m[metric.RaceExcess], excess)
			}
			totalRace += float64(excess)

			if len(h.Meta.Faults) > 0 {
				best, bestUpper := 0, 0
				for _, f := range h.Meta.Faults {
					c, cu := bruteCeiling(ivs, w, int64(f.At)-w, int64(f.At+f.For)+w)
					best, bestUpper = max(best, c), max(bestUpper, cu)
				}
				if m[metric.AfterFaultCeiling] != float64(best) || m[metric.AfterFaultCeilingUpper] != float64(bestUpper) {
					fail(k, "after_fault_ceiling [%v, %v], want [%d, %d]", m[metric.AfterFaultCeiling], m[metric.AfterFaultCeilingUpper], best, bestUpper)
				}
			}
		}
		// Sliding's peak is the worst identity's most decision times in
		// one window.
		worstID := -1
		for k := range h.Meta.Identities {
			if worstID < 0 || res.PerIdentity[k].Metrics[metric.Ceiling] > res.PerIdentity[worstID].Metrics[metric.Ceiling] {
				worstID = k
			}
		}
		if h.Len() > 0 {
			ts := bruteDecisionTimes(h, allowedOf(h, worstID))
			idx := make([]int, len(ts))
			for j := range idx {
				idx[j] = j
			}
			peak := 0.0
			for _, p := range res.Sliding {
				peak = max(peak, p.Value)
			}
			if want := trueSliding(ts, idx, w); peak != float64(want) {
				t.Fatalf("iteration %d: sliding peak %v, want %d", iter, peak, want)
			}
		}
		if res.Metrics[metric.Ceiling] != worstCeiling {
			t.Fatalf("iteration %d: scenario ceiling %v, worst identity %v", iter, res.Metrics[metric.Ceiling], worstCeiling)
		}
		if res.Metrics[metric.Slipped] != totalSlipped {
			t.Fatalf("iteration %d: scenario slipped %v, sum %v", iter, res.Metrics[metric.Slipped], totalSlipped)
		}
		if h.Meta.Rounds > 0 && res.Metrics[metric.RaceExcess] != totalRace {
			t.Fatalf("iteration %d: scenario race_excess %v, sum %v", iter, res.Metrics[metric.RaceExcess], totalRace)
		}
		checkCounts(t, h, res)
		checkLatency(t, h, res)
	}
}

// checkLatency checks the latency percentiles (Intended to Received, and
// Sent to Received for Conduct.FromSent) and the send lag (Intended to
// Sent) against sorting every request that ran:
// the histogram answers with the highest value equivalent to the sample at
// the percentile's rank, at most 0.1% (+1 µs) above it.
func checkLatency(t *testing.T, h *history.History, res Result) {
	t.Helper()
	var lat, lag, fromSent []int64 // µs
	for i := range h.Len() {
		r := h.At(i)
		if r.Outcome == decision.Dropped {
			continue
		}
		lat = append(lat, max(0, int64(r.Received-r.Intended)/1000))
		lag = append(lag, max(0, int64(r.Sent-r.Intended)/1000))
		fromSent = append(fromSent, max(0, int64(r.Received-r.Sent)/1000))
	}
	check := func(m Metrics, name string, vs []int64, p float64) {
		t.Helper()
		got, ok := m[name]
		if len(vs) == 0 {
			if ok {
				t.Fatalf("%s = %v with no request that ran", name, got)
			}
			return
		}
		slices.Sort(vs)
		rank := max(1, min(int64(p/100*float64(len(vs))+0.5), int64(len(vs))))
		want := vs[rank-1]
		us := math.Round(got * 1000)
		if !ok || us < float64(want) || us > float64(want)*1.001+1 {
			t.Fatalf("%s = %v ms (present %v), want %d µs (+0.1%%) from %v", name, got, ok, want, vs)
		}
	}
	for name, p := range map[string]float64{metric.P50: 50, metric.P90: 90, metric.P99: 99, metric.P999: 99.9, metric.Max: 100} {
		check(res.Metrics, name, lat, p)
		check(res.Conduct.FromSent, name, fromSent, p)
	}
	check(res.Metrics, metric.SendLagP99, lag, 99)
}

// checkCounts checks the count, fault and Retry-After figures by direct
// counting.
func checkCounts(t *testing.T, h *history.History, res Result) {
	t.Helper()
	var byOutcome [5]float64
	var open, closed, denied, missing float64
	for i := range h.Len() {
		r := h.At(i)
		byOutcome[r.Outcome]++
		open += b2f(r.By == decision.ByFailOpen)
		closed += b2f(r.By == decision.ByFailClosed)
		if r.Outcome == decision.Denied {
			denied++
			missing += b2f(r.RetryAfter == history.NoTime)
		}
	}
	want := Metrics{metric.Requests: float64(h.Len()), metric.Allowed: byOutcome[decision.Allowed], metric.Denied: byOutcome[decision.Denied],
		metric.Errors: byOutcome[decision.Error], metric.Dropped: byOutcome[decision.Dropped]}
	if open+closed > 0 || len(h.Meta.Faults) > 0 {
		want[metric.FailOpen], want[metric.FailClosed] = open, closed
	}
	if denied > 0 {
		want[metric.RetryAfterMissing] = missing / denied
	}
	for name, v := range want {
		if got, ok := res.Metrics[name]; !ok || !near(got, v) {
			t.Fatalf("%s = %v (present %v), want %v", name, got, ok, v)
		}
	}
	if _, ok := res.Metrics[metric.RetryAfterMissing]; ok && denied == 0 {
		t.Fatal("retry_after_missing present without denials")
	}
	if _, ok := res.Metrics[metric.FailOpen]; ok && open+closed == 0 && len(h.Meta.Faults) == 0 {
		t.Fatal("fail_open present without faults or fail-open records")
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func records(h *history.History) []history.Record {
	var out []history.Record
	for i := range h.Len() {
		out = append(out, h.At(i))
	}
	return out
}

// A target whose clock is off rlctl's by a fixed amount per gateway (a
// remote Redis's TIME, gateways with their own clocks) reports decision
// times outside the requests' send and receive. Analyze moves each
// gateway's times back within them, so every ceiling lies within the
// bounds that send and receive alone allow; and where a zero-width
// interval pins the offset, it recovers the same figures as an unshifted
// clock.
func TestClockShiftKeepsDecisionsInTheirIntervals(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 42))
	iterations := 1000
	if raceEnabled {
		iterations = 200
	}
	for iter := range iterations {
		tr := randomRun(rng)
		h := tr.h
		if h.Len() == 0 {
			continue
		}
		w := int64(h.Meta.Limit.Window)
		// Offsets far beyond offsetSlack, and within the half second
		// around Intended that a history keeps to the nanosecond.
		offs := [2]time.Duration{-10*time.Millisecond - time.Duration(rng.Int64N(int64(90*time.Millisecond))), 10*time.Millisecond + time.Duration(rng.Int64N(int64(400*time.Millisecond)))}
		shifted := history.New(h.Meta, h.Len())
		pinned := history.New(h.Meta, h.Len()+2)
		for i := range h.Len() {
			r := h.At(i)
			if r.Decided != history.NoTime {
				r.Decided += offs[r.Gateway]
			}
			shifted.Append(r)
			pinned.Append(r)
		}
		// A zero-width interval on each gateway pins its offset exactly.
		for g := range 2 {
			at := time.Duration(int64(iter) * int64(time.Millisecond))
			pinned.Append(history.Record{Intended: at, Sent: at, Received: at, Decided: at + offs[g], RetryAfter: history.NoTime,
				Identity: 0, Round: history.NoRound, Gateway: uint16(g), Outcome: decision.Denied, By: decision.ByRedis})
		}
		res := analyzed(t, shifted, Options{})
		for k := range h.Meta.Identities {
			var ivs [][2]int64
			for _, i := range allowedOf(h, k) {
				r := h.At(i)
				ivs = append(ivs, [2]int64{int64(r.Sent), int64(r.Received)})
			}
			lower, upper := bruteCeiling(ivs, w, math.MinInt64/4, math.MaxInt64/4)
			if c := res.PerIdentity[k].Metrics[metric.Ceiling]; c < float64(lower) || c > float64(upper) {
				t.Fatalf("iteration %d, identity %d: ceiling %v outside [%d, %d] with offsets %v\nrecords %v", iter, k, c, lower, upper, offs, records(shifted))
			}
		}
		// Pinned: the same decisions as with no offset at all.
		unshifted := history.New(h.Meta, h.Len()+2)
		for i := range pinned.Len() {
			r := pinned.At(i)
			if r.Decided != history.NoTime {
				r.Decided -= offs[r.Gateway]
			}
			unshifted.Append(r)
		}
		got, want := analyzed(t, pinned, Options{}), analyzed(t, unshifted, Options{})
		if !reflect.DeepEqual(got.PerIdentity, want.PerIdentity) {
			t.Fatalf("iteration %d: pinned offsets %v not recovered:\n%+v\n%+v", iter, offs, got.PerIdentity, want.PerIdentity)
		}
	}
}

// One clock shared by every gateway that moves in steps (the embedded
// Redis's TIME lags real time by up to its catch-up step) fits no single
// offset exactly, nor one per gateway. The shift must then be the same for
// every gateway: a limiter that decides by that clock is judged on how its
// decisions sit relative to one another, which a shared shift keeps.
func TestClockShiftOfAJitteryClockIsShared(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 9))
	for _, lag := range []time.Duration{500 * time.Microsecond, 5 * time.Millisecond} {
		h := history.New(history.Meta{Identities: []string{"u"}, Gateways: []string{"g0", "g1", "g2"}}, 0)
		for i := range 3000 {
			at := time.Duration(i) * 300 * time.Microsecond
			sent := at + time.Duration(rng.Int64N(int64(20*time.Microsecond)))
			decided := sent + time.Duration(rng.Int64N(int64(100*time.Microsecond)))
			recv := decided + time.Duration(rng.Int64N(int64(200*time.Microsecond)))
			h.Append(history.Record{Intended: at, Sent: sent, Received: recv, Decided: decided - time.Duration(rng.Int64N(int64(lag))),
				RetryAfter: history.NoTime, Round: history.NoRound, Gateway: uint16(i % 3), Outcome: decision.Allowed, By: decision.ByRedis})
		}
		a := newAnalyzer(h, Options{})
		a.scan()
		if a.shift == nil {
			continue // no shift at all is shared too
		}
		for g, s := range a.shift {
			if s != a.shift[0] {
				t.Fatalf("lag up to %v: gateway %d shifted by %v, gateway 0 by %v", lag, g, time.Duration(s), time.Duration(a.shift[0]))
			}
		}
	}
}

// mustAnalyze is analyze, failing the test on an error.
func mustAnalyze(t testing.TB, h *history.History, opts Options, bigIdentity int, b budget) Result {
	t.Helper()
	res, err := analyze(h, opts, bigIdentity, b)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
