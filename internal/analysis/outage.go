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
	// A read error leaves the outages found so far; AnalyzeDisk reports it.
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
	// most requests ever in flight at once).
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
func ExplainDrops(h *history.History) Drops {
	var sum dropSums
	// A read error leaves what was seen so far; AnalyzeDisk reports it.
	_ = h.Chunks(func(c *history.History) error {
		sum.add(c)
		return nil
	})
	d := Drops{Dropped: sum.dropped, Workers: sum.workers}
	if d.Dropped == 0 {
		return Drops{}
	}
	if h.Meta.Workers > 0 {
		d.Workers = h.Meta.Workers
	}
	if sum.samples > 0 {
		d.Service = sum.svc / time.Duration(sum.samples)
		d.Rate = sum.rate / float64(sum.samples)
	}
	d.SlowTarget = d.Workers > 0 && d.Rate*d.Service.Seconds() >= float64(d.Workers)/2
	return d
}

// dropSums gathers ExplainDrops' figures a piece of history at a time. A
// spilled history's chunks are swept each on its own, so a request in
// flight across a chunk's edge is missed there: over chunks of 65,536
// records, a small error in estimates that are means anyway.
type dropSums struct {
	dropped int64
	workers int
	svc     time.Duration
	rate    float64
	samples int64
}

func (d *dropSums) add(h *history.History) {
	// drops and intended are sorted times; ev the sends and answers. Drops
	// outnumber the rest in an overload, so they are kept apart from the
	// events (no per-drop event to sort) and each reads the rate offered
	// before it with two cursors that only move forward.
	var ev []flight
	drops := make([]time.Duration, 0, 64)
	intended := make([]time.Duration, 0, h.Len())
	for i := range h.Len() {
		intended = append(intended, h.Intended(i))
		if h.Outcome(i) == decision.Dropped {
			drops = append(drops, h.Intended(i))
			continue
		}
		s, r := h.Sent(i), h.Received(i)
		if s == history.NoTime || r == history.NoTime {
			continue
		}
		r = max(r, s)
		ev = append(ev, flight{s, r - s, +1}, flight{r, r - s, -1})
	}
	d.dropped += int64(len(drops))
	if len(drops) == 0 {
		return
	}
	slices.SortFunc(ev, func(a, b flight) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	slices.Sort(drops)
	slices.Sort(intended)
	// One sweep keeps the number in flight and the sum of their service
	// times; each drop reads both, and the rate offered just before it.
	// At equal times answers come first, then drops, then sends: a worker
	// freed at t serves a request due at t.
	var inflight, sum int64
	k, lo, hi := 0, 0, 0
	for _, at := range drops {
		for ; k < len(ev) && (ev[k].at < at || ev[k].at == at && ev[k].delta < 0); k++ {
			inflight += int64(ev[k].delta)
			sum += int64(ev[k].delta) * int64(ev[k].svc)
			d.workers = max(d.workers, int(inflight))
		}
		if inflight <= 0 {
			continue
		}
		d.svc += time.Duration(sum / inflight)
		for lo < len(intended) && intended[lo] < at-dropWindow {
			lo++
		}
		for hi < len(intended) && intended[hi] <= at {
			hi++
		}
		d.rate += float64(hi-lo) / dropWindow.Seconds()
		d.samples++
	}
	for ; k < len(ev); k++ {
		inflight += int64(ev[k].delta)
		d.workers = max(d.workers, int(inflight))
	}
}

// flight is a request's send (+1) or answer (-1) in dropSums' sweep, with
// its send-to-answer time.
type flight struct {
	at, svc time.Duration
	delta   int
}
