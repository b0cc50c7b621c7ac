package analysis

import (
	"fmt"
	"slices"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
)

// ShardResult is one Redis Cluster shard's failover figures: those of the
// identities whose keys it held when the run started (Meta.Shards).
type ShardResult struct {
	// Shard names the shard as Meta.Shards does (its primary's address at
	// the start).
	Shard string
	// FailedOver says a failover fault acted on this shard.
	FailedOver bool
	// Identities is how many of the run's identities it held.
	Identities int
	// Metrics: election_errors, election_fail_open, election_fail_closed
	// (its identities' undecided requests during the failover's election:
	// the election's own chain for the shard that failed over, the span of
	// that election for the others) and after_fault_ceiling (its worst
	// identity's).
	Metrics Metrics
}

// EndpointResult is one endpoint's failover figures: election_errors,
// election_fail_open, election_fail_closed and election_ms over its own
// requests, and failover_denied.
type EndpointResult struct {
	Endpoint string
	Metrics  Metrics
}

// shardOf is the shard that held identity id's keys, "" when unknown.
func (a *analyzer) shardOf(id uint32) string {
	if int(id) < len(a.h.Meta.Shards) {
		return a.h.Meta.Shards[id]
	}
	return ""
}

// shardFigures splits the failover figures between the Cluster shards
// (Result.PerShard) and sums them up for the shards that failed over and
// the others (failed_shard_* and other_shards_*), when the history names
// each identity's shard and a failover names the shard it acted on.
//
// An identity on the shard failover k acted on counts the undecided
// requests of k's election chain among that shard's identities (see
// chain); an identity on another shard counts its undecided requests sent
// from k's start to electionGap after the later of that chain's last
// request and the first write the new primary took (Fault.Answered): the
// span in which a shard that noticed the election would have shown it.
func (a *analyzer) shardFigures(res *Result, el *elections) {
	failed := map[string]bool{}
	for _, f := range a.faults {
		if isFailover(f) && f.Shard != "" {
			failed[f.Shard] = true
		}
	}
	if len(a.h.Meta.Shards) == 0 || len(failed) == 0 {
		return
	}
	index := map[string]int{}
	var shards []ShardResult
	ceilings, uppers := map[int]float64{}, map[int]float64{}
	for k := range min(len(a.h.Meta.Shards), len(a.idState)) {
		sh := a.shardOf(uint32(k))
		if sh == "" {
			continue
		}
		j, ok := index[sh]
		if !ok {
			j = len(shards)
			index[sh] = j
			shards = append(shards, ShardResult{Shard: sh, FailedOver: failed[sh], Metrics: Metrics{}})
		}
		shards[j].Identities++
		if v, ok := a.idState[k].fig.get(fAfterFaultCeiling); ok {
			ceilings[j] = max(ceilings[j], v)
		}
		if v, ok := a.idState[k].fig.get(fAfterFaultCeilingUpper); ok {
			uppers[j] = max(uppers[j], v)
		}
	}
	tallies := make([]Tally, len(shards))
	// For each failover on a shard: the shard (-1 when it held no
	// identity, so that every identity counts as on another), and the
	// span [from, to) in which the other shards' undecided requests count.
	type span struct {
		shard    int
		from, to int64
	}
	var spans []span
	for k, f := range a.faults {
		if !isFailover(f) || f.Shard == "" {
			continue
		}
		j, ok := index[f.Shard]
		if !ok {
			j = -1
		}
		e := el.chain(el.shard, k, 0, int64(f.At))
		if j >= 0 {
			tallies[j].merge(e.Tally)
		}
		spans = append(spans, span{j, int64(f.At), min(a.until(k), max(e.last, int64(f.Answered))+int64(electionGap))})
	}
	_ = a.chunks(func(h *history.History, _ int) { // a read error: Analyze reports it
		for i := range h.Len() {
			if !electionRequest(h, i) {
				continue
			}
			sent := int64(h.Sent(i))
			o, ok := index[a.shardOf(a.identity(h, i))]
			if !ok {
				continue
			}
			for _, sp := range spans {
				if o != sp.shard && sent >= sp.from && sent < sp.to {
					tallies[o].add(h, i)
				}
			}
		}
	})
	group := map[bool]struct {
		undecided, ceiling, upper string
	}{
		true:  {metric.FailedShardElectionUndecided, metric.FailedShardAfterFaultCeiling, metric.FailedShardAfterFaultCeilingUpper},
		false: {metric.OtherShardsElectionUndecided, metric.OtherShardsAfterFaultCeiling, metric.OtherShardsAfterFaultCeilingUpper},
	}
	for j := range shards {
		sr := &shards[j]
		t := tallies[j]
		sr.Metrics[metric.ElectionErrors] = float64(t.Errors)
		sr.Metrics[metric.ElectionFailOpen] = float64(t.FailOpen)
		sr.Metrics[metric.ElectionFailClosed] = float64(t.FailClosed)
		g := group[sr.FailedOver]
		res.Metrics[g.undecided] += float64(t.Undecided())
		if v, ok := ceilings[j]; ok {
			sr.Metrics[metric.AfterFaultCeiling] = v
			res.Metrics[g.ceiling] = max(res.Metrics[g.ceiling], v)
		}
		if v, ok := uppers[j]; ok {
			sr.Metrics[metric.AfterFaultCeilingUpper] = v
			res.Metrics[g.upper] = max(res.Metrics[g.upper], v)
		}
	}
	res.PerShard = shards
}

// endpointFigures gives each endpoint its own failover figures
// (Result.PerEndpoint, see partFigures).
func (a *analyzer) endpointFigures(res *Result, el *elections) {
	// Every endpoint index a record can hold gets its part, so one pass
	// serves; past Meta's endpoints, those up to the last one that had an
	// undecided or failover-deny answer are listed too, by number.
	ms := a.partFigures(func(k, p int, start int64) election { return el.chain(el.ep, k, p, start) },
		endpointParts, func(h *history.History, i int) int { return int(h.Endpoint(i)) })
	n := max(len(a.h.Meta.Endpoints), el.maxEp+1)
	for ep := endpointParts - 1; ep >= n; ep-- {
		if ms[ep].Metrics[metric.FailoverDenied] > 0 {
			n = ep + 1
			break
		}
	}
	names := slices.Clone(a.h.Meta.Endpoints)
	for len(names) < n {
		names = append(names, fmt.Sprintf("#%d", len(names)))
	}
	if ceilings := a.endpointAfterFault(len(names)); ceilings != nil {
		for ep, c := range ceilings {
			ms[ep].Metrics[metric.AfterFaultCeiling] = float64(c)
		}
	}
	for ep, name := range names {
		res.PerEndpoint = append(res.PerEndpoint, EndpointResult{Endpoint: name, Metrics: ms[ep].Metrics})
	}
}

// endpointAfterFault is each of n endpoints' after_fault_ceiling: the most
// one identity definitely had admitted through that endpoint in one window
// around a fault (the windows after_fault_ceiling looks at), counting that
// endpoint's admissions alone. Only the admissions near a fault are held.
// Nil without a window or a fault.
func (a *analyzer) endpointAfterFault(n int) []int {
	if a.w <= 0 || len(a.faults) == 0 {
		return nil
	}
	type span struct{ lo, hi int64 }
	spans := make([]span, len(a.faults))
	for k, f := range a.faults {
		lo, hi := a.afterFaultSpan(f)
		spans[k] = span{lo, hi}
	}
	type key struct {
		id uint32
		ep int
	}
	type ivs struct{ sent, recv []int64 }
	near := map[key]*ivs{}
	_ = a.chunks(func(h *history.History, _ int) { // a read error: Analyze reports it
		for i := range h.Len() {
			if h.Outcome(i) != decision.Allowed {
				continue
			}
			s, r := a.decidedBetween(h, i)
			if r-s >= a.w {
				continue // never definitely inside one window
			}
			// Definitely in [t, t+W) for t in (r-W, s]: keep it when that
			// meets a fault's span of t.
			if !slices.ContainsFunc(spans, func(sp span) bool { return r-a.w < sp.hi && s >= sp.lo }) {
				continue
			}
			k := key{a.identity(h, i), int(h.Endpoint(i))}
			if k.ep >= n {
				continue
			}
			v := near[k]
			if v == nil {
				v = &ivs{}
				near[k] = v
			}
			v.sent, v.recv = append(v.sent, s), append(v.recv, r)
		}
	})
	out := make([]int, n)
	for k, v := range near {
		slices.Sort(v.sent)
		slices.Sort(v.recv)
		for _, sp := range spans {
			// Definite intervals [r-W+1, s]: starts from recv, ends from sent.
			c := maxOverlap(sliceCursor(v.recv), 1-a.w, sliceCursor(v.sent), sp.lo, sp.hi)
			out[k.ep] = max(out[k.ep], c)
		}
	}
	return out
}
