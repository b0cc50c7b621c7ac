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

// retryRec is one request that ran, as the retry figures need it.
type retryRec struct {
	sent       int64 // Sent (Intended when it has none), not clamped
	rawSent    int64 // Sent, or NoTime
	recv       int64 // Received, or NoTime
	s, e       int64 // decision interval
	retryAfter int64 // or NoTime
	told       int64
	waited     int64
	id         uint32
	attempt    uint8
	outcome    decision.Outcome
}

func (r *retryRec) allowed() bool { return r.outcome == decision.Allowed }
func (r *retryRec) denied() bool  { return r.outcome == decision.Denied }

// retryRecOf is record i of chunk c.
func (a *analyzer) retryRecOf(c *history.History, i int) retryRec {
	s, e := a.decidedBetween(c, i)
	raw := c.Sent(i)
	sent := raw
	if sent == history.NoTime {
		sent = c.Intended(i)
	}
	return retryRec{
		sent: int64(sent), rawSent: int64(raw), recv: int64(c.Received(i)), s: s, e: e,
		retryAfter: int64(c.RetryAfter(i)), told: int64(c.Told(i)), waited: int64(c.Waited(i)),
		id: a.identity(c, i), attempt: c.Attempt(i), outcome: c.Outcome(i),
	}
}

// retryFigures measures how retrying clients fared (Analyze documents the
// definitions). It applies only to histories with retries, and is computed
// per identity: a reset, a denial and an admission concern one limit.
func (a *analyzer) retryFigures(res *Result) error {
	h := a.h
	if !h.HasRetries() {
		return nil
	}
	acc := retryAcc{herdPeak: -1, herdID: -1}
	if a.spilled {
		if err := a.retryGroups(&acc); err != nil {
			return err
		}
	} else {
		byID := make([][]int32, len(a.idState))
		for i := range a.n {
			if h.Outcome(i) == decision.Dropped {
				continue // never sent
			}
			id := a.identity(h, i)
			byID[id] = append(byID[id], int32(i))
		}
		var rs []retryRec
		for id, idx := range byID {
			rs = rs[:0]
			for _, i := range idx {
				rs = append(rs, a.retryRecOf(h, int(i)))
			}
			acc.identity(id, rs)
		}
	}
	acc.result(res)
	return nil
}

// retryAcc accumulates the retry figures identity by identity.
type retryAcc struct {
	retries, relimited     int64 // answered retries, denied ones
	excessSum              float64
	excessN                int64
	exact, lied            int64
	herdPeak               int
	herdID                 int
	herdAt                 int64
	arrivalsSent, retrySet []int64
}

// identity adds identity id's requests that ran, rs, in history order.
func (acc *retryAcc) identity(id int, rs []retryRec) {
	if len(rs) == 0 {
		return
	}
	acc.herd(id, rs)
	acc.retried(rs, newAdmissions(rs), newDenials(rs))
	if id == acc.herdID {
		acc.keepArrivals(rs)
	}
}

// herd raises herd_peak to the arrivals of identity id in [R,
// R+metric.HerdSpan) after each reset R its answers announced, when more.
func (acc *retryAcc) herd(id int, rs []retryRec) {
	var resets []int64
	sends := make([]int64, 0, len(rs))
	for j := range rs {
		r := &rs[j]
		sends = append(sends, clampTime(r.sent))
		if r.denied() && r.retryAfter != int64(history.NoTime) && r.recv != int64(history.NoTime) {
			resets = append(resets, clampTime(r.recv+r.retryAfter))
		}
		if r.attempt > 0 && r.told != int64(history.NoTime) && r.waited != int64(history.NoTime) {
			resets = append(resets, clampTime(r.sent-r.waited+r.told))
		}
	}
	slices.Sort(sends)
	for _, r := range resets {
		lo := sort.Search(len(sends), func(j int) bool { return sends[j] >= r })
		hi := sort.Search(len(sends), func(j int) bool { return sends[j] >= r+int64(metric.HerdSpan) })
		if n := hi - lo; n > acc.herdPeak || (n == acc.herdPeak && id < acc.herdID) {
			acc.herdPeak, acc.herdID, acc.herdAt = n, id, r
		}
	}
}

// admissions are an identity's admissions ordered by their decision
// interval's start, with the running maximum of its end (was anything
// admitted by then?) and the suffix minimum of its end (the earliest
// admission from then on).
type admissions struct {
	starts, prefMaxEnd, sufMinEnd []int64
}

func newAdmissions(rs []retryRec) admissions {
	var adm []retryRec
	for _, r := range rs {
		if r.allowed() {
			adm = append(adm, r)
		}
	}
	slices.SortStableFunc(adm, func(x, y retryRec) int { return cmp.Compare(x.s, y.s) })
	ad := admissions{
		starts:     make([]int64, len(adm)),
		prefMaxEnd: make([]int64, len(adm)),
		sufMinEnd:  make([]int64, len(adm)+1),
	}
	ad.sufMinEnd[len(adm)] = maxTime
	for j, r := range adm {
		ad.starts[j] = r.s
		ad.prefMaxEnd[j] = r.e
		if j > 0 {
			ad.prefMaxEnd[j] = max(ad.prefMaxEnd[j], ad.prefMaxEnd[j-1])
		}
	}
	for j := len(adm) - 1; j >= 0; j-- {
		ad.sufMinEnd[j] = min(adm[j].e, ad.sufMinEnd[j+1])
	}
	return ad
}

// within tells whether some admission's interval touched [from, to].
func (ad admissions) within(from, to int64) bool {
	k := sort.Search(len(ad.starts), func(j int) bool { return ad.starts[j] > to }) // starts[:k] <= to
	return k > 0 && ad.prefMaxEnd[k-1] >= from
}

// earliestFrom is the earliest end of an admission whose interval starts
// at or after at (maxTime when none).
func (ad admissions) earliestFrom(at int64) int64 {
	k := sort.Search(len(ad.starts), func(j int) bool { return ad.starts[j] >= at })
	return ad.sufMinEnd[k]
}

// denials are an identity's answered denials by arrival, so a retry finds
// the denial it repeats (the one that arrived Waited before it was sent)
// and with it the earliest moment that denial can have been decided.
type denials []retryRec

func newDenials(rs []retryRec) denials {
	var d denials
	for _, r := range rs {
		if r.denied() && r.recv != int64(history.NoTime) {
			d = append(d, r)
		}
	}
	slices.SortStableFunc(d, func(x, y retryRec) int { return cmp.Compare(x.recv, y.recv) })
	return d
}

// decidedFrom is the start of the decision interval of the denial that
// arrived at prev (within a microsecond), or prev when none did (a merged
// or hand-made history): its arrival.
func (d denials) decidedFrom(prev int64) int64 {
	k := sort.Search(len(d), func(j int) bool { return d[j].recv >= prev-int64(time.Microsecond) })
	if k < len(d) && d[k].recv <= prev+int64(time.Microsecond) {
		return d[k].s
	}
	return prev
}

// retried counts the identity's answered retries: how many were denied
// again, how much longer than needed the admitted ones waited (against
// the identity's admissions adm), and of those that waited exactly what
// they were told, which were denied with nothing admitted since the
// denial they repeat (found in den).
func (acc *retryAcc) retried(rs []retryRec, adm admissions, den denials) {
	for j := range rs {
		r := &rs[j]
		if r.attempt == 0 || (!r.allowed() && !r.denied()) {
			continue
		}
		acc.retries++
		if r.denied() {
			acc.relimited++
		}
		if r.rawSent == int64(history.NoTime) || r.waited == int64(history.NoTime) {
			continue
		}
		prev := clampTime(r.rawSent - r.waited) // the previous answer's arrival
		if r.allowed() {
			// The earliest admission of this identity decided after the
			// previous answer arrived: the retry could have been there.
			acc.excessSum += float64(max(0, clampTime(r.rawSent)-adm.earliestFrom(prev)))
			acc.excessN++
		}
		if r.told == int64(history.NoTime) {
			continue
		}
		tl := r.told
		if r.waited < tl || r.waited > tl+exactSlack(tl) {
			continue // it did not wait exactly what it was told
		}
		acc.exact++
		if r.denied() && !adm.within(den.decidedFrom(prev), r.e) {
			// Early only when nothing of the identity was admitted from
			// the previous denial on: quota that came back and went to
			// another client is contention, not an early hint.
			acc.lied++
		}
	}
}

// keepArrivals keeps the herd identity's sends, and its retries', for the
// arrivals chart around the herd's reset.
func (acc *retryAcc) keepArrivals(rs []retryRec) {
	acc.arrivalsSent, acc.retrySet = acc.arrivalsSent[:0], acc.retrySet[:0]
	for _, r := range rs {
		acc.arrivalsSent = append(acc.arrivalsSent, clampTime(r.sent))
		if r.attempt > 0 {
			acc.retrySet = append(acc.retrySet, clampTime(r.sent))
		}
	}
}

func (acc *retryAcc) result(res *Result) {
	if acc.herdPeak >= 0 {
		res.Metrics[metric.HerdPeak] = float64(acc.herdPeak)
		res.HerdAt = time.Duration(acc.herdAt)
		res.Arrivals = binArrivals(acc.arrivalsSent, acc.herdAt)
		res.RetryArrivals = binArrivals(acc.retrySet, acc.herdAt)
	}
	if acc.retries > 0 {
		res.Metrics[metric.Relimited] = float64(acc.relimited) / float64(acc.retries)
	}
	if acc.excessN > 0 {
		res.Metrics[metric.RetryWaitExcess] = acc.excessSum / float64(acc.excessN) / 1e6
	}
	if acc.exact > 0 {
		res.Metrics[metric.RetryAfterEarly] = float64(acc.lied) / float64(acc.exact)
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
