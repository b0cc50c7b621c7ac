package analysis

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
)

// HerdSpan is the span after a reset in which herd_peak counts arrivals:
// clients told the same moment come back within it.
const HerdSpan = 100 * time.Millisecond

// Arrival chart geometry: ArrivalBin-wide bins from ArrivalBefore before
// the herd's reset to ArrivalAfter after it.
const (
	ArrivalBin    = 10 * time.Millisecond
	ArrivalBefore = 200 * time.Millisecond
	ArrivalAfter  = 800 * time.Millisecond
)

// exactSlack is how late a retry may be sent and still count as having
// waited exactly what it was told: the larger of 5 ms and 5% of the wait,
// room for a client's timer and scheduler, not for jitter.
func exactSlack(told int64) int64 {
	return max(int64(5*time.Millisecond), told/20)
}

// arrival is one request of an identity, for the retry figures.
type arrival struct {
	sent    int64 // Sent (Intended when it has none)
	recv    int64 // Received, or NoTime
	s, e    int64 // decision interval
	retry   bool
	allowed bool
	denied  bool
}

// retryFigures measures how retrying clients fared (Analyze documents the
// definitions). It applies only to histories with retries, and is computed
// per identity: a reset, a denial and an admission concern one limit.
func (a *analyzer) retryFigures(res *Result) {
	h := a.h
	if !h.HasRetries() {
		return
	}
	byID := make([][]int32, len(a.idState))
	for i := range a.n {
		if h.Outcome(i) == decision.Dropped {
			continue // never sent
		}
		id := a.identity(i)
		byID[id] = append(byID[id], int32(i))
	}
	var (
		retries, relimited     int64 // answered retries, denied ones
		excessSum              float64
		excessN                int64
		exact, lied            int64
		herdPeak               = -1
		herdID                 = -1
		herdAt                 int64
		arrivalsSent, retrySet []int64
	)
	for id, idx := range byID {
		if len(idx) == 0 {
			continue
		}
		rs := make([]arrival, len(idx))
		var resets []int64
		for j, i := range idx {
			s, e := a.decidedBetween(int(i))
			sent := h.Sent(int(i))
			if sent == history.NoTime {
				sent = h.Intended(int(i))
			}
			o := h.Outcome(int(i))
			rs[j] = arrival{sent: clampTime(int64(sent)), recv: int64(h.Received(int(i))), s: s, e: e,
				retry: h.Attempt(int(i)) > 0, allowed: o == decision.Allowed, denied: o == decision.Denied}
			if o == decision.Denied {
				if ra := h.RetryAfter(int(i)); ra != history.NoTime {
					if recv := h.Received(int(i)); recv != history.NoTime {
						resets = append(resets, clampTime(int64(recv+ra)))
					}
				}
			}
			if rs[j].retry {
				if told, waited := h.Told(int(i)), h.Waited(int(i)); told != history.NoTime && waited != history.NoTime {
					resets = append(resets, clampTime(int64(sent-waited+told)))
				}
			}
		}
		slices.SortFunc(rs, func(x, y arrival) int { return cmp.Compare(x.sent, y.sent) })
		sends := make([]int64, len(rs))
		for j, r := range rs {
			sends[j] = r.sent
		}
		// herd_peak: arrivals in [R, R+HerdSpan) after each announced reset R.
		for _, r := range resets {
			lo := sort.Search(len(sends), func(j int) bool { return sends[j] >= r })
			hi := sort.Search(len(sends), func(j int) bool { return sends[j] >= r+int64(HerdSpan) })
			if n := hi - lo; n > herdPeak || (n == herdPeak && id < herdID) {
				herdPeak, herdID, herdAt = n, id, r
			}
		}

		// The identity's admissions ordered by their decision interval's
		// start, with the running maximum of its end (was anything
		// admitted by then?) and the suffix minimum of its end (the
		// earliest admission from then on).
		adm := make([]arrival, 0, len(rs))
		for _, r := range rs {
			if r.allowed {
				adm = append(adm, r)
			}
		}
		slices.SortFunc(adm, func(x, y arrival) int { return cmp.Compare(x.s, y.s) })
		starts := make([]int64, len(adm))
		prefMaxEnd := make([]int64, len(adm))
		sufMinEnd := make([]int64, len(adm)+1)
		sufMinEnd[len(adm)] = maxTime
		for j, r := range adm {
			starts[j] = r.s
			prefMaxEnd[j] = r.e
			if j > 0 {
				prefMaxEnd[j] = max(prefMaxEnd[j], prefMaxEnd[j-1])
			}
		}
		for j := len(adm) - 1; j >= 0; j-- {
			sufMinEnd[j] = min(adm[j].e, sufMinEnd[j+1])
		}
		// admittedWithin: did some admission's interval touch [from, to]?
		admittedWithin := func(from, to int64) bool {
			k := sort.Search(len(starts), func(j int) bool { return starts[j] > to }) // starts[:k] <= to
			return k > 0 && prefMaxEnd[k-1] >= from
		}
		// The identity's denials by arrival, so a retry finds the denial it
		// repeats (the one that arrived Waited before it was sent) and with
		// it the earliest moment that denial can have been decided.
		var denials []arrival
		for _, r := range rs {
			if r.denied && r.recv != int64(history.NoTime) {
				denials = append(denials, r)
			}
		}
		slices.SortFunc(denials, func(x, y arrival) int { return cmp.Compare(x.recv, y.recv) })
		deniedAt := func(prev int64) int64 {
			k := sort.Search(len(denials), func(j int) bool { return denials[j].recv >= prev-int64(time.Microsecond) })
			if k < len(denials) && denials[k].recv <= prev+int64(time.Microsecond) {
				return denials[k].s
			}
			return prev // not found (a merged or hand-made history): its arrival
		}

		for _, i := range idx {
			if h.Attempt(int(i)) == 0 {
				continue
			}
			o := h.Outcome(int(i))
			if o != decision.Allowed && o != decision.Denied {
				continue
			}
			retries++
			if o == decision.Denied {
				relimited++
			}
			sent, waited, told := h.Sent(int(i)), h.Waited(int(i)), h.Told(int(i))
			if sent == history.NoTime || waited == history.NoTime {
				continue
			}
			prev := clampTime(int64(sent - waited)) // the previous answer's arrival
			if o == decision.Allowed {
				// The earliest admission of this identity decided after the
				// previous answer arrived: the retry could have been there.
				k := sort.Search(len(starts), func(j int) bool { return starts[j] >= prev })
				excessSum += float64(max(0, clampTime(int64(sent))-sufMinEnd[k]))
				excessN++
			}
			if told == history.NoTime {
				continue
			}
			tl := int64(told)
			if int64(waited) < tl || int64(waited) > tl+exactSlack(tl) {
				continue // it did not wait exactly what it was told
			}
			exact++
			if o == decision.Denied {
				// Early only when nothing of the identity was admitted from
				// the previous denial on: quota that came back and went to
				// another client is contention, not an early hint.
				_, recv := a.decidedBetween(int(i))
				if !admittedWithin(deniedAt(prev), recv) {
					lied++
				}
			}
		}
		if id == herdID {
			arrivalsSent, retrySet = arrivalsSent[:0], retrySet[:0]
			for _, r := range rs {
				arrivalsSent = append(arrivalsSent, r.sent)
				if r.retry {
					retrySet = append(retrySet, r.sent)
				}
			}
		}
	}
	if herdPeak >= 0 {
		res.Metrics[metric.HerdPeak] = float64(herdPeak)
		res.HerdAt = time.Duration(herdAt)
		res.Arrivals = binArrivals(arrivalsSent, herdAt)
		res.RetryArrivals = binArrivals(retrySet, herdAt)
	}
	if retries > 0 {
		res.Metrics[metric.Relimited] = float64(relimited) / float64(retries)
	}
	if excessN > 0 {
		res.Metrics[metric.RetryWaitExcess] = excessSum / float64(excessN) / 1e6
	}
	if exact > 0 {
		res.Metrics[metric.RetryAfterEarly] = float64(lied) / float64(exact)
	}
}

// binArrivals counts sends in ArrivalBin bins around at, from
// ArrivalBefore before it to ArrivalAfter after; each point's At is its
// bin's start relative to at.
func binArrivals(sends []int64, at int64) []Point {
	n := int((ArrivalBefore + ArrivalAfter) / ArrivalBin)
	out := make([]Point, n)
	for b := range out {
		out[b].At = time.Duration(b)*ArrivalBin - ArrivalBefore
	}
	for _, s := range sends {
		off := s - at + int64(ArrivalBefore)
		if off < 0 {
			continue
		}
		if b := off / int64(ArrivalBin); b < int64(n) {
			out[b].Value++
		}
	}
	return out
}
