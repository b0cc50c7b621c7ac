package analysis

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
)

// FailoverActions are the fault actions that change which server is the
// primary: the election figures apply to them.
var FailoverActions = []string{"failover", "kill-primary"}

// electionGap ends an election: an undecided request sent more than this
// after the previous one (or after the fault, for the first) belongs to
// something else.
const electionGap = time.Second

// election is what one failover did to the decisions.
type election struct {
	Tally
	// last is the send time of the election's last undecided request, and
	// end its answer; both the fault's start when there was none.
	last, end int64
}

// isFailover reports whether f changes the primary.
func isFailover(f history.Fault) bool { return slices.Contains(FailoverActions, f.Action) }

// until is when fault k's figures stop: the next fault's start.
func (a *analyzer) until(k int) int64 {
	until := int64(math.MaxInt64)
	for _, g := range a.faults {
		if g.At > a.faults[k].At {
			until = min(until, int64(g.At))
		}
	}
	return until
}

// failoverFigures adds the election and failover-detection figures to res
// when the run had a failover fault (see Analyze): the scenario's are
// partFigures' over one part holding every request, then split by shard,
// endpoint and identity.
func (a *analyzer) failoverFigures(res *Result) {
	if !slices.ContainsFunc(a.faults, isFailover) {
		return
	}
	el := a.elections()
	whole := a.partFigures(func(k, _ int, start int64) election { return el.chain(el.whole, k, 0, start) },
		1, func(*history.History, int) int { return 0 })[0]
	maps.Copy(res.Metrics, whole.Metrics)
	a.shardFigures(res, el)
	a.endpointFigures(res, el)
	a.identityFailoverFigures(res, el)
	if whole.Metrics[metric.FailoverDenied] == 0 {
		return
	}
	// Detection is timed from the latest failover that began before the
	// first denial.
	from := int64(math.MinInt64)
	for _, f := range a.faults {
		if isFailover(f) && int64(f.At) <= whole.denyFrom {
			from = max(from, int64(f.At))
		}
	}
	if from != math.MinInt64 {
		res.Metrics[metric.FailoverDetectMs] = float64(whole.denyAnswered-from) / 1e6
	}
}

// lastFault is the index of the fault that began last (the later in the
// list on a tie); the run has at least one.
func (a *analyzer) lastFault() int {
	last := 0
	for k, f := range a.faults {
		if f.At >= a.faults[last].At {
			last = k
		}
	}
	return last
}

// decidedByRedis reports whether record i was answered by the limiter's
// store itself (Redis, or a lease slice it granted).
func decidedByRedis(h *history.History, i int) bool {
	o := h.Outcome(i)
	if o != decision.Allowed && o != decision.Denied {
		return false
	}
	by := h.By(i)
	return by == decision.ByRedis || by == decision.ByLease
}

// MaxFailoverIdentities bounds Result.PerIdentityFailover: past it, only
// the worst identities are listed.
const MaxFailoverIdentities = 1000

// identityFailoverFigures gives each identity its own failover figures
// (Result.PerIdentityFailover, see partFigures) and its
// after_fault_ceiling.
func (a *analyzer) identityFailoverFigures(res *Result, el *elections) {
	ms := a.partFigures(func(k, p int, start int64) election { return el.chain(el.id, k, p, start) },
		len(a.idState), func(h *history.History, i int) int { return int(a.identity(h, i)) })
	out := make([]IdentityResult, 0, len(a.idState))
	for k, pr := range ms {
		m := pr.Metrics
		if v, ok := a.idState[k].fig.get(fAfterFaultCeiling); ok {
			m[metric.AfterFaultCeiling] = v
		}
		out = append(out, IdentityResult{Identity: a.idNames[k], Metrics: m})
	}
	if len(out) > MaxFailoverIdentities {
		order := make([]int, len(out))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(x, y int) int { return WorstFailoverFirst(out[x].Metrics, out[y].Metrics) })
		order = order[:MaxFailoverIdentities]
		slices.Sort(order) // back in Meta order
		kept := make([]IdentityResult, len(order))
		for i, j := range order {
			kept[i] = out[j]
		}
		out = kept
	}
	res.PerIdentityFailover = out
}

// partResult is one part's failover figures, and when its first
// failover-deny was decided (from) and answered.
type partResult struct {
	Metrics
	denyFrom, denyAnswered int64
}

// partFigures measures a failover part by part (each endpoint's requests,
// or each identity's), n parts: chain gives part p's election after fault
// k (see elections), and part says whose a record is. Each part gets the
// figures the scenario gets, from its own requests alone: its election
// (the chains of its undecided requests: election_errors, election_fail_open, election_fail_closed,
// election_ms), its failover detection (failover_denied, and with any,
// failover_deny_ms) and, when the last fault is a failover, recover_ms:
// from the fault to the first answer Redis decided for one of its
// requests sent after its election's last undecided one (absent when none
// came).
func (a *analyzer) partFigures(chain func(k, p int, start int64) election, n int, part func(*history.History, int) int) []partResult {
	last := -1 // the last fault, when it is a failover
	if len(a.faults) > 0 && isFailover(a.faults[a.lastFault()]) {
		last = a.lastFault()
	}
	ms := make([]partResult, n)
	lastChain := make([]int64, n) // the last fault's chain's last send
	for p := range n {
		var t Tally
		var longest int64
		for k, f := range a.faults {
			if isFailover(f) {
				e := chain(k, p, int64(f.At))
				t.merge(e.Tally)
				longest = max(longest, e.end-int64(f.At))
				if k == last {
					lastChain[p] = e.last
				}
			}
		}
		ms[p] = partResult{Metrics: Metrics{
			metric.ElectionErrors: float64(t.Errors), metric.ElectionFailOpen: float64(t.FailOpen),
			metric.ElectionFailClosed: float64(t.FailClosed), metric.ElectionMs: float64(longest) / 1e6,
		}, denyFrom: math.MaxInt64, denyAnswered: math.MaxInt64}
	}
	denied := make([]int64, n)
	lastDeny, back := make([]int64, n), make([]int64, n)
	for p := range n {
		lastDeny[p], back[p] = math.MinInt64, math.MaxInt64
	}
	_ = a.chunks(func(h *history.History, _ int) { // a read error: Analyze reports it
		for i := range h.Len() {
			p := part(h, i)
			if p >= n {
				continue
			}
			if h.By(i) == decision.ByFailoverDeny {
				s, r := a.decidedBetween(h, i)
				denied[p]++
				pr := &ms[p]
				pr.denyFrom, pr.denyAnswered, lastDeny[p] = min(pr.denyFrom, s), min(pr.denyAnswered, r), max(lastDeny[p], r)
				continue
			}
			if last < 0 || !decidedByRedis(h, i) || h.Sent(i) == history.NoTime {
				continue
			}
			at, s := int64(a.faults[last].At), int64(h.Sent(i))
			if s < at || (lastChain[p] > at && s <= lastChain[p]) {
				continue
			}
			_, r := a.decidedBetween(h, i)
			back[p] = min(back[p], r)
		}
	})
	for p, pr := range ms {
		m := pr.Metrics
		m[metric.FailoverDenied] = float64(denied[p])
		if denied[p] > 0 {
			m[metric.FailoverDenyMs] = float64(lastDeny[p]-pr.denyFrom) / 1e6
		}
		if back[p] != math.MaxInt64 {
			m[metric.RecoverMs] = float64(back[p]-int64(a.faults[last].At)) / 1e6
		}
	}
	return ms
}

// WorstFailoverFirst orders two identities' failover figures worst first:
// the higher after_fault_ceiling (what got through), then more undecided
// requests in the election, then the longer election.
func WorstFailoverFirst(x, y Metrics) int {
	undecided := func(m Metrics) float64 {
		return m[metric.ElectionErrors] + m[metric.ElectionFailOpen] + m[metric.ElectionFailClosed]
	}
	if c := cmp.Compare(y[metric.AfterFaultCeiling], x[metric.AfterFaultCeiling]); c != 0 {
		return c
	}
	if c := cmp.Compare(undecided(y), undecided(x)); c != 0 {
		return c
	}
	return cmp.Compare(y[metric.ElectionMs], x[metric.ElectionMs])
}
