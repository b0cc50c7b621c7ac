package analysis

import (
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
				h.Append(history.Record{Intended: at, Sent: history.NoTime, Received: history.NoTime,
					Decided: history.NoTime, RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Dropped})
				continue
			}
			busy[free] = at + service
			h.Append(timedRec(at, service, decision.Allowed, decision.ByRedis))
		}
		return h
	}
	// 1000/s against 50ms answers needs 50 in flight: 10 workers are far
	// too few, and the target's slowness is why.
	slow := ExplainDrops(build(50*ms, 10))
	if slow.Dropped == 0 || !slow.SlowTarget || slow.Workers != 10 {
		t.Errorf("slow target: %+v", slow)
	}
	if slow.Service < 45*ms || slow.Service > 55*ms || slow.Rate < 900 || slow.Rate > 1100 {
		t.Errorf("slow target: service %v at %.0f/s, want about 50ms at 1000/s", slow.Service, slow.Rate)
	}
	// Answers in 1ms need one in flight; drops among 10 workers then come
	// from rlctl itself. Hand-made: the workers stay busy 1ms but drops
	// still happen (as when the scheduler does not run the workers).
	h := build(ms, 10)
	for at := 500 * ms; at < 600*ms; at += 10 * ms {
		h.Append(history.Record{Intended: at + ms/2, Sent: history.NoTime, Received: history.NoTime,
			Decided: history.NoTime, RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Dropped})
	}
	fast := ExplainDrops(h)
	if fast.Dropped != 10 || fast.SlowTarget {
		t.Errorf("fast target: %+v", fast)
	}
	if none := ExplainDrops(build(ms, 10)); none != (Drops{}) {
		t.Errorf("no drops: %+v", none)
	}
}
