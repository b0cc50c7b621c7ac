package analysis

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

func timedRec(at, took time.Duration, o decision.Outcome, by decision.By) history.Record {
	return history.Record{Intended: at, Sent: at, Received: at + took, Decided: history.NoTime,
		RetryAfter: history.NoTime, Round: history.NoRound, Outcome: o, By: by}
}

func TestOutagesOutsidePlannedSpans(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	h := history.New(history.Meta{Identities: []string{"u"}, Gateways: []string{"g"}}, 0)
	// Decided by Redis every 10ms for 3s, except: fail-open from 1.0s to
	// 1.5s (unplanned), errors from 2.0s to 2.2s (inside a planned fault),
	// one lone fail-closed at 2.8s.
	for at := time.Duration(0); at < 3*time.Second; at += 10 * ms {
		r := timedRec(at, ms, decision.Allowed, decision.ByRedis)
		switch {
		case at >= time.Second && at < 1500*ms:
			r.By = decision.ByFailOpen
		case at >= 2*time.Second && at < 2200*ms:
			r.Outcome, r.By = decision.Error, decision.ByUnknown
		case at == 2800*ms:
			r.Outcome, r.By = decision.Denied, decision.ByFailClosed
		}
		h.Append(r)
	}
	// A dropped request is never sent: it is no outage.
	h.Append(history.Record{Intended: 100 * ms, Sent: history.NoTime, Received: history.NoTime,
		Decided: history.NoTime, RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Dropped})

	got := Outages(h, []Span{{From: 1950 * ms, To: 2300 * ms}}, 200*ms)
	want := []Outage{
		{Span: Span{From: time.Second, To: 1491 * ms}, Tally: Tally{FailOpen: 50}},
		{Span: Span{From: 2800 * ms, To: 2801 * ms}, Tally: Tally{FailClosed: 1}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("outage %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// Without the planned span the errors are an outage of their own; a
	// gap wider than the space between the stretches joins them all.
	if got := Outages(h, nil, 200*ms); len(got) != 3 || got[1].Errors != 20 {
		t.Errorf("unplanned: %+v", got)
	}
	if got := Outages(h, nil, time.Second); len(got) != 1 || got[0].Undecided() != 71 {
		t.Errorf("one wide gap: %+v", got)
	}
}

func TestExplainDrops(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tally := false // drops as records, or tallied as the traffic engine keeps them
	build := func(service time.Duration, workers int) *history.History {
		h := history.New(history.Meta{Identities: []string{"u"}, Gateways: []string{"g"}, Workers: workers}, 0)
		busy := make([]time.Duration, workers) // when each worker frees up
		for at := time.Duration(0); at < time.Second; at += ms {
			free := -1
			for w, until := range busy {
				if until <= at {
					free = w
					break
				}
			}
			if free < 0 {
				if tally {
					h.Meta.Drops.Add(at, 0, 0, 0)
					continue
				}
				h.Append(history.Record{Intended: at, Sent: history.NoTime, Received: history.NoTime,
					Decided: history.NoTime, RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Dropped})
				continue
			}
			busy[free] = at + service
			h.Append(timedRec(at, service, decision.Allowed, decision.ByRedis))
		}
		return h
	}
	for _, tally = range []bool{false, true} {
		// 1000/s against 50ms answers needs 50 in flight: 10 workers are far
		// too few, and the target's slowness is why.
		slow := ExplainDrops(build(50*ms, 10))
		if slow.Dropped == 0 || !slow.SlowTarget || slow.Workers != 10 {
			t.Errorf("tally %v: slow target: %+v", tally, slow)
		}
		if slow.Service < 45*ms || slow.Service > 55*ms || slow.Rate < 900 || slow.Rate > 1100 {
			t.Errorf("tally %v: slow target: service %v at %.0f/s, want about 50ms at 1000/s", tally, slow.Service, slow.Rate)
		}
		// Answers in 1ms need one in flight; drops among 10 workers then come
		// from rlctl itself. Hand-made: the workers stay busy 1ms but drops
		// still happen (as when the scheduler does not run the workers).
		h := build(ms, 10)
		for at := 500 * ms; at < 600*ms; at += 10 * ms {
			if tally {
				h.Meta.Drops.Add(at+ms/2, 0, 0, 0)
				continue
			}
			h.Append(history.Record{Intended: at + ms/2, Sent: history.NoTime, Received: history.NoTime,
				Decided: history.NoTime, RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Dropped})
		}
		fast := ExplainDrops(h)
		if fast.Dropped != 10 || fast.SlowTarget {
			t.Errorf("tally %v: fast target: %+v", tally, fast)
		}
	}
	if none := ExplainDrops(build(ms, 10)); none != (Drops{}) {
		t.Errorf("no drops: %+v", none)
	}
}

// bruteDropSums is dropSums.add done plainly: every drop an event in one
// sorted sweep, and the rate before it found by counting every record.
func bruteDropSums(h *history.History) dropSums {
	type event struct {
		at, svc time.Duration
		delta   int
	}
	var d dropSums
	var ev []event
	for i := range h.Len() {
		if h.Outcome(i) == decision.Dropped {
			d.dropped++
			ev = append(ev, event{at: h.Intended(i)})
			continue
		}
		s, r := h.Sent(i), h.Received(i)
		if s == history.NoTime || r == history.NoTime {
			continue
		}
		if r <= s {
			continue // never in flight at any instant
		}
		ev = append(ev, event{s, r - s, +1}, event{r, r - s, -1})
	}
	if d.dropped == 0 {
		return d
	}
	slices.SortStableFunc(ev, func(a, b event) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return a.delta - b.delta
	})
	var inflight, sum int64
	for _, e := range ev {
		inflight += int64(e.delta)
		sum += int64(e.delta) * int64(e.svc)
		if e.delta != 0 {
			continue
		}
		d.workers = max(d.workers, int(inflight))
		if inflight <= 0 {
			continue
		}
		d.svc += time.Duration(sum / inflight)
		n := 0
		for i := range h.Len() {
			if in := h.Intended(i); in >= e.at-dropWindow && in <= e.at {
				n++
			}
		}
		d.rate += float64(n) / dropWindow.Seconds()
		d.samples++
	}
	return d
}

// TestDropSumsMatchesBruteForce compares ExplainDrops' difference arrays with
// bruteDropSums on random runs whose times collide often (a coarse grid),
// so the order of answers, drops and sends at one instant matters.
func TestDropSumsMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 2))
	for trial := range 300 {
		h := history.New(history.Meta{Identities: []string{"u"}, Gateways: []string{"g"}}, 0)
		n := rng.IntN(400)
		grid := time.Duration(1+rng.IntN(20)) * time.Millisecond
		for range n {
			at := time.Duration(rng.IntN(200)) * grid
			switch rng.IntN(4) {
			case 0, 1:
				h.Append(history.Record{Intended: at, Sent: history.NoTime, Received: history.NoTime,
					Decided: history.NoTime, RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Dropped})
			case 2:
				h.Append(timedRec(at, time.Duration(rng.IntN(10))*grid, decision.Allowed, decision.ByRedis))
			default:
				r := timedRec(at, 0, decision.Error, decision.ByUnanswered)
				r.Received = history.NoTime
				h.Append(r)
			}
		}
		got := sumDrops(h)
		want := bruteDropSums(h)
		if got.dropped != want.dropped || got.workers != want.workers || got.svc != want.svc ||
			got.samples != want.samples || math.Abs(got.rate-want.rate) > 1e-6*max(1, want.rate) {
			t.Fatalf("trial %d (%d records): got %+v, want %+v", trial, n, got, want)
		}
	}
}
