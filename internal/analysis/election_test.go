package analysis

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// bruteElection is an election found the plain way: the requests sorted by
// send time, walked from the start while each is within electionGap of
// the one before.
func bruteElection(sent, r []int64, ts []Tally, start int64) election {
	order := make([]int, len(sent))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(sent[x], sent[y]) })
	e := election{last: start, end: start}
	for _, i := range order {
		if sent[i] < start {
			continue
		}
		if sent[i]-e.last > int64(electionGap) {
			break
		}
		e.last, e.end = sent[i], max(e.end, r[i])
		e.Tally.merge(ts[i])
	}
	return e
}

// TestEpisodesElectionEqualsSortedWalk adds random undecided requests in
// random order, on a coarse grid so that gaps of exactly electionGap and
// equal send times are common: the first episode is the election the
// sorted walk finds.
func TestEpisodesElectionEqualsSortedWalk(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 4))
	for trial := range 2000 {
		n := rng.IntN(40)
		grid := int64(electionGap) / int64(1+rng.IntN(4))
		start := int64(rng.IntN(3)) * grid
		sent, r := make([]int64, n), make([]int64, n)
		ts := make([]Tally, n)
		var es episodes
		for i := range n {
			sent[i] = start + int64(rng.IntN(12))*grid
			r[i] = sent[i] + rng.Int64N(int64(3*time.Second))
			ts[i] = Tally{Errors: int64(rng.IntN(2)), FailOpen: int64(rng.IntN(2)), Fallback: 1}
			es.add(sent[i], r[i], ts[i])
		}
		got, want := es.election(start), bruteElection(sent, r, ts, start)
		if got != want {
			t.Fatalf("trial %d (%d requests, grid %v): episodes give %+v, the sorted walk %+v", trial, n, time.Duration(grid), got, want)
		}
		for k := 1; k < len(es); k++ {
			if es[k].lo-es[k-1].hi <= int64(electionGap) || es[k].lo > es[k].hi {
				t.Fatalf("trial %d: episodes %+v not apart by more than electionGap", trial, es)
			}
		}
	}
}

// TestEpisodesOfALongOutageStayOne: an hour of undecided requests, every
// 10ms and out of order, is one episode, not 360,000 requests held.
func TestEpisodesOfALongOutageStayOne(t *testing.T) {
	t.Parallel()
	const n = 360_000
	var es episodes
	for i := range n {
		// A request is answered 0-2s late, so they complete out of order.
		at := int64(i^7) * int64(10*time.Millisecond)
		es.add(at, at+int64(i%200)*int64(10*time.Millisecond), Tally{Errors: 1})
	}
	if len(es) != 1 || es[0].t.Errors != n || es[0].hi != int64(n-1)*int64(10*time.Millisecond) {
		t.Fatalf("%d episodes (first %+v); want one of %d requests", len(es), es[0], n)
	}
}
