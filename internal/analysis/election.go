package analysis

import (
	"math"
	"sort"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// episode is a run of one part's undecided requests (see elections), each
// sent within electionGap of the one before.
type episode struct {
	lo, hi int64 // the first and the last send
	end    int64 // the latest answer
	t      Tally
}

// episodes are one part's undecided requests sent from a failover's start
// until the next fault, as episodes in order of sending, each more than
// electionGap after the one before: a request added joins the episodes it
// is near, whatever the order they come in. They stand in for the
// requests: an outage of an hour after a failover is one episode per part,
// however many requests it left undecided.
type episodes []episode

func (es *episodes) add(sent, r int64, t Tally) {
	s := *es
	gap := int64(electionGap)
	i := len(s) // the first episode beginning after sent: mostly none
	if i > 0 && s[i-1].lo > sent {
		i = sort.Search(len(s), func(k int) bool { return s[k].lo > sent })
	}
	left := i > 0 && sent-s[i-1].hi <= gap
	right := i < len(s) && s[i].lo-sent <= gap
	switch {
	case left && right: // it bridges the two
		l := &s[i-1]
		l.hi, l.end = max(l.hi, s[i].hi), max(l.end, s[i].end, r)
		l.t.merge(s[i].t)
		l.t.merge(t)
		*es = append(s[:i], s[i+1:]...)
	case left:
		l := &s[i-1]
		l.hi, l.end = max(l.hi, sent), max(l.end, r)
		l.t.merge(t)
	case right:
		x := &s[i]
		x.lo, x.end = sent, max(x.end, r)
		x.t.merge(t)
	default:
		s = append(s, episode{})
		copy(s[i+1:], s[i:])
		s[i] = episode{lo: sent, hi: sent, end: r, t: t}
		*es = s
	}
}

// election is the part's election after a failover that started at start:
// its first episode, when that began within electionGap of the start.
func (es episodes) election(start int64) election {
	if len(es) == 0 || es[0].lo-start > int64(electionGap) {
		return election{last: start, end: start}
	}
	e := es[0]
	return election{Tally: e.t, last: e.hi, end: max(start, e.end)}
}

// elections are the failovers' elections part by part, from one pass over
// the history: for each failover fault, the undecided requests (an error
// or a failure policy's answer, not a failover-deny) sent from its start
// until the next fault, as episodes of the whole run, of the identities on
// the shard it acted on, of each endpoint and of each identity.
type elections struct {
	index []int // per fault, its failover's index below; -1 for another fault
	until []int64
	// Per failover, per part: whole and shard have one part each.
	whole [][]episodes
	shard [][]episodes
	ep    [][]episodes
	id    [][]episodes
	// maxEp is the highest endpoint index of an undecided request
	// anywhere in the run, -1 when none.
	maxEp int
}

func (a *analyzer) elections() *elections {
	el := &elections{index: make([]int, len(a.faults)), maxEp: -1}
	var ks []int
	for k, f := range a.faults {
		el.index[k] = -1
		if isFailover(f) {
			el.index[k] = len(ks)
			ks = append(ks, k)
			el.until = append(el.until, a.until(k))
		}
	}
	el.whole = make([][]episodes, len(ks))
	el.shard = make([][]episodes, len(ks))
	el.ep = make([][]episodes, len(ks))
	el.id = make([][]episodes, len(ks))
	for j := range ks {
		el.whole[j] = make([]episodes, 1)
		el.shard[j] = make([]episodes, 1)
		el.ep[j] = make([]episodes, endpointParts)
		el.id[j] = make([]episodes, len(a.idState))
	}
	_ = a.chunks(func(h *history.History, _ int) { // a read error: Analyze reports it
		for i := range h.Len() {
			if !electionRequest(h, i) {
				continue
			}
			ep := h.Endpoint(i)
			el.maxEp = max(el.maxEp, int(ep))
			sent := int64(h.Sent(i))
			var t Tally
			t.add(h, i)
			_, r := a.decidedBetween(h, i)
			id := a.identity(h, i)
			for j, k := range ks {
				f := a.faults[k]
				if sent < int64(f.At) || sent >= el.until[j] {
					continue
				}
				el.whole[j][0].add(sent, r, t)
				if f.Shard != "" && a.shardOf(id) == f.Shard {
					el.shard[j][0].add(sent, r, t)
				}
				el.ep[j][ep].add(sent, r, t)
				el.id[j][id].add(sent, r, t)
			}
		}
	})
	return el
}

// electionRequest reports whether record i counts in an election: sent,
// and undecided by the limiter (an error or a failure policy's answer), but
// not refused by a gateway for the failover it detected (counted apart).
func electionRequest(h *history.History, i int) bool {
	return undecided(h, i) && h.By(i) != decision.ByFailoverDeny && h.Sent(i) != history.NoTime
}

// endpointParts is the number of endpoint indices a record can hold.
const endpointParts = math.MaxUint8 + 1

// chain is part p's election after fault k (a failover) among parts (one
// of el's: per failover, per part).
func (el *elections) chain(parts [][]episodes, k, p int, start int64) election {
	j := el.index[k]
	if j < 0 || p >= len(parts[j]) {
		return election{last: start, end: start}
	}
	return parts[j][p].election(start)
}
