package analysis

import (
	"cmp"
	"slices"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// Span is a stretch of a run's clock, [From, To].
type Span struct {
	From, To time.Duration
}

// Outage is a stretch of a run in which the limiter did not decide: its
// requests failed (no answer) or were decided by a failure policy
// (fail-open, fail-closed, a local fallback) because the limiter's store
// failed or was too slow. Counts are requests whose send fell in it.
type Outage struct {
	Span
	Tally
}

// Tally counts requests the limiter did not decide, by what answered
// instead.
type Tally struct {
	FailOpen   int64
	FailClosed int64
	Fallback   int64 // on_error local, or a failover-deny
	Errors     int64
}

// Undecided is the number of requests counted.
func (t Tally) Undecided() int64 { return t.FailOpen + t.FailClosed + t.Fallback + t.Errors }

// add counts record i, an undecided one.
// merge adds u's counts to t.
func (t *Tally) merge(u Tally) {
	t.FailOpen += u.FailOpen
	t.FailClosed += u.FailClosed
	t.Fallback += u.Fallback
	t.Errors += u.Errors
}

func (t *Tally) add(h *history.History, i int) {
	switch {
	case h.Outcome(i) == decision.Error:
		t.Errors++
	case h.By(i) == decision.ByFailOpen:
		t.FailOpen++
	case h.By(i) == decision.ByFailClosed:
		t.FailClosed++
	default:
		t.Fallback++
	}
}

// undecided reports whether record i got no decision from the limiter
// itself: an error, or a failure policy's answer.
func undecided(h *history.History, i int) bool {
	if h.Outcome(i) == decision.Error {
		return true
	}
	switch h.By(i) {
	case decision.ByFailOpen, decision.ByFailClosed, decision.ByFallback, decision.ByFailoverDeny:
		return true
	}
	return false
}

// Outages finds the stretches of h in which requests went undecided (see
// Outage) outside the planned spans: a request counts when its
// send-to-answer interval overlaps no planned span. Undecided requests less
// than gap apart join one outage. Outages come in time order. A spilled
// history is read a chunk at a time, and the chunks' outages joined.
func Outages(h *history.History, planned []Span, gap time.Duration) []Outage {
	var out []Outage
	// A read error leaves the outages found so far; Analyze reports it.
	_ = h.Chunks(func(c *history.History) error {
		out = append(out, outagesOf(c, planned, gap)...)
		return nil
	})
	return joinOutages(out, gap)
}

// joinOutages sorts outages by start and joins those less than gap apart.
func joinOutages(os []Outage, gap time.Duration) []Outage {
	slices.SortStableFunc(os, func(a, b Outage) int { return cmp.Compare(a.From, b.From) })
	var out []Outage
	for _, o := range os {
		if n := len(out); n > 0 && o.From <= out[n-1].To+gap {
			p := &out[n-1]
			p.To = max(p.To, o.To)
			p.merge(o.Tally)
			continue
		}
		out = append(out, o)
	}
	return out
}

// outagesOf is Outages over the records of h alone.
func outagesOf(h *history.History, planned []Span, gap time.Duration) []Outage {
	var idx []int
	for i := range h.Len() {
		if !undecided(h, i) {
			continue
		}
		s, r := h.Sent(i), h.Received(i)
		if s == history.NoTime {
			continue // dropped: never sent
		}
		if r == history.NoTime || r < s {
			r = s
		}
		if overlapsAny(planned, s, r) {
			continue
		}
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return nil
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(h.Sent(a), h.Sent(b)) })
	var out []Outage
	cur := -1
	for _, i := range idx {
		s, r := h.Sent(i), max(h.Received(i), h.Sent(i))
		if cur < 0 || s > out[cur].To+gap {
			out = append(out, Outage{Span: Span{From: s, To: r}})
			cur++
		}
		o := &out[cur]
		o.To = max(o.To, r)
		o.add(h, i)
	}
	return out
}

func overlapsAny(spans []Span, from, to time.Duration) bool {
	for _, sp := range spans {
		if from <= sp.To && to >= sp.From {
			return true
		}
	}
	return false
}

// Drops explains a run's dropped requests: whether the workers were all
// busy because the target answered slowly, or because rlctl itself could
// not keep up.
type Drops struct {
	// Dropped counts the dropped requests.
	Dropped int64
	// Workers is the worker pool (the history's Meta.Workers, else the
	// most requests in flight at a moment a request was dropped).
	Workers int
	// Service is the mean send-to-answer time of the requests in flight at
	// the moments requests were dropped.
	Service time.Duration
	// Rate is the offered rate (requests per second, by intended time)
	// around those moments.
	Rate float64
	// SlowTarget is true when Rate × Service, the requests a pool must hold
	// in flight to keep up (Little's law), reaches half the pool: answers
	// were slow enough to occupy the workers. Otherwise the workers were
	// busy with rlctl's own work (or could not be scheduled), and the
	// bottleneck was rlctl.
	SlowTarget bool
}

// dropWindow is the span before a drop over which the offered rate is
// measured.
const dropWindow = 100 * time.Millisecond

// ExplainDrops looks at the moments h's requests were dropped (see Drops).
// It returns a zero Drops when none was.
//
// A drop with a record is looked at at its own instant; the drops a
// history tallies (Meta.Drops) at the middle of their slice of the
// schedule (10ms wide, wider only past 2^17 slices), and spread evenly
// over it for the offered rate. Two passes over the records, each one a chunk at a time, and
// memory in proportion to those moments, not to the records.
func ExplainDrops(h *history.History) Drops {
	ds := sumDrops(h)
	if ds.dropped == 0 {
		return Drops{}
	}
	d := Drops{Dropped: ds.dropped, Workers: ds.workers}
	if h.Meta.Workers > 0 {
		d.Workers = h.Meta.Workers
	}
	if ds.samples > 0 {
		d.Service = ds.svc / time.Duration(ds.samples)
		d.Rate = ds.rate / float64(ds.samples)
	}
	d.SlowTarget = d.Workers > 0 && d.Rate*d.Service.Seconds() >= float64(d.Workers)/2
	return d
}

// sumDrops makes ExplainDrops' passes over h.
func sumDrops(h *history.History) dropSums {
	var ds dropSums
	ds.moments(h)
	if len(ds.at) == 0 {
		return ds
	}
	// A read error leaves what was seen so far; Analyze reports it.
	_ = h.Chunks(func(c *history.History) error {
		ds.add(c)
		return nil
	})
	ds.addTallied(&h.Meta.Drops)
	ds.sum()
	return ds
}

// dropSums gathers ExplainDrops' figures. Each moment k, at[k], stands for
// weight[k] drops. inFlight, inService and offered are difference arrays
// over the moments (a request counts from the first moment it covers and
// stops at the first it does not), summed in sum: the requests in flight
// at a moment (sent before it, answered after it), the sum of their
// send-to-answer times, and the requests intended in the dropWindow up to
// it; tallied adds the tallied drops to offered.
type dropSums struct {
	at                           []time.Duration
	weight                       []int64
	inFlight, inService, offered []int64
	tallied                      []float64

	dropped int64
	workers int
	// svc and rate sum each moment's mean service time and offered rate,
	// weighted by its drops, over the samples drops seen with requests in
	// flight.
	svc     time.Duration
	rate    float64
	samples int64
}

// maxDropMoments bounds the moments kept from dropped records: past it
// they are joined into 10ms steps, as tallied drops are.
const maxDropMoments = 1 << 20

// moments collects the moments of h's drops, sorted, each time once.
func (d *dropSums) moments(h *history.History) {
	type moment struct {
		at time.Duration
		w  int64
	}
	var ms []moment
	for _, s := range h.Meta.Drops.Slices {
		ms = append(ms, moment{s.From + (s.To-s.From)/2, s.Count})
	}
	join := func(step time.Duration) {
		slices.SortFunc(ms, func(a, b moment) int { return cmp.Compare(a.at, b.at) })
		out := ms[:0]
		for _, m := range ms {
			if n := len(out); n > 0 && m.at-out[n-1].at < step {
				out[n-1].w += m.w
				continue
			}
			out = append(out, m)
		}
		ms = out
	}
	_ = h.Chunks(func(c *history.History) error {
		for i := range c.Len() {
			if c.Outcome(i) == decision.Dropped {
				ms = append(ms, moment{c.Intended(i), 1})
			}
		}
		if len(ms) > maxDropMoments {
			join(1)
			if len(ms) > maxDropMoments/2 {
				join(10 * time.Millisecond)
			}
		}
		return nil
	})
	join(1)
	d.at = make([]time.Duration, len(ms))
	d.weight = make([]int64, len(ms))
	for k, m := range ms {
		d.at[k], d.weight[k] = m.at, m.w
		d.dropped += m.w
	}
	n := len(ms) + 1
	d.inFlight, d.inService, d.offered, d.tallied = make([]int64, n), make([]int64, n), make([]int64, n), make([]float64, n)
}

// first is the index of the first moment after t (at or after it when
// orAt).
func (d *dropSums) first(t time.Duration, orAt bool) int {
	k, _ := slices.BinarySearchFunc(d.at, t, func(a, t time.Duration) int {
		if a < t || a == t && !orAt {
			return -1
		}
		return 1
	})
	return k
}

// add counts chunk c's records at the moments they cover. At one instant
// answers come before drops, and drops before sends: a worker freed at t
// serves a request due at t.
func (d *dropSums) add(c *history.History) {
	for i := range c.Len() {
		in := c.Intended(i)
		lo, hi := d.first(in, true), d.first(in+dropWindow, false)
		d.offered[lo]++
		d.offered[hi]--
		if c.Outcome(i) == decision.Dropped {
			continue
		}
		s, r := c.Sent(i), c.Received(i)
		if s == history.NoTime || r == history.NoTime {
			continue
		}
		r = max(r, s)
		lo, hi = d.first(s, false), d.first(r, true)
		if lo < hi {
			d.inFlight[lo]++
			d.inFlight[hi]--
			d.inService[lo] += int64(r - s)
			d.inService[hi] -= int64(r - s)
		}
	}
}

// addTallied adds the offered rate of the tallied drops: a slice's drops
// spread evenly over it, each moment counting the part of them within the
// dropWindow up to it.
func (d *dropSums) addTallied(t *history.Drops) {
	for _, s := range t.Slices {
		for k := d.first(s.From, true); k < len(d.at) && d.at[k]-dropWindow <= s.To; k++ {
			lo, hi := max(s.From, d.at[k]-dropWindow), min(s.To, d.at[k])
			switch {
			case hi < lo:
			case s.To == s.From:
				d.tallied[k] += float64(s.Count)
			default:
				d.tallied[k] += float64(s.Count) * float64(hi-lo) / float64(s.To-s.From)
			}
		}
	}
}

// sum reads each moment's figures off the difference arrays.
func (d *dropSums) sum() {
	var n, svc, offered int64
	for k := range d.at {
		n += d.inFlight[k]
		svc += d.inService[k]
		offered += d.offered[k]
		d.workers = max(d.workers, int(n))
		if n <= 0 {
			continue
		}
		w := d.weight[k]
		d.svc += time.Duration(svc/n) * time.Duration(w)
		d.rate += float64(w) * (float64(offered) + d.tallied[k]) / dropWindow.Seconds()
		d.samples += w
	}
}
