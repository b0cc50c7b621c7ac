package analysis

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
)

// Options carries what a history cannot know about the design under test.
type Options struct {
	// EnvelopeBurst and EnvelopeRate (per second) are the token-bucket
	// envelope a correct limiter of the design's own policy obeys; allowed
	// requests outside it are "slipped". Zero means the strict sliding
	// window of the published limit L per W: burst L, rate L/W. A token
	// bucket of capacity C and refill R should pass EnvelopeBurst C and
	// EnvelopeRate R, so its legitimate 2L-1 per window is not called a slip.
	// Set both: once either is non-zero they are taken as given (a rate of
	// 0 is a fixed budget of EnvelopeBurst).
	EnvelopeBurst float64
	EnvelopeRate  float64
	// Interval is the step of the Timeline; 0 picks one giving about 100
	// points (1, 2 or 5 times a power of ten, at least 1 ms).
	Interval time.Duration
}

// outcome tallies, indexed by decision.Outcome.
type tally [decision.Dropped + 1]int64

type identityState struct {
	counts     tally
	failOpen   int64
	failClosed int64
	maybe      int64 // errors that may have been admitted (decision.ByUnanswered)
	fig        figures
	first      opening
}

// figures are one identity's metrics in a fixed array rather than a map:
// a run may have a million identities, and only the ones reported need a
// Metrics map (see maxPerIdentity).
type figures struct {
	v   [numFigures]float64
	has uint32 // bit k: v[k] applies
}

func (f *figures) set(k int, v float64) { f.v[k], f.has = v, f.has|1<<k }

func (f *figures) get(k int) (float64, bool) { return f.v[k], f.has&(1<<k) != 0 }

// Per-identity figures, by index into figureNames.
const (
	fRequests = iota
	fAllowed
	fDenied
	fErrors
	fDropped
	fFailOpen
	fFailClosed
	fCeiling
	fCeilingUpper
	fCeilingRatio
	fBurst
	fSustainedRate
	fSlipped
	fBoundaryAllowed
	fBoundaryAllowedUpper
	fRaceExcess
	fAfterFaultCeiling
	fAfterFaultCeilingUpper
	numFigures
)

var figureNames = [numFigures]string{
	metric.Requests, metric.Allowed, metric.Denied, metric.Errors, metric.Dropped, metric.FailOpen, metric.FailClosed, metric.Ceiling, metric.CeilingUpper,
	metric.CeilingRatio, metric.Burst, metric.SustainedRate, metric.Slipped, metric.BoundaryAllowed, metric.BoundaryAllowedUpper, metric.RaceExcess, metric.AfterFaultCeiling,
	metric.AfterFaultCeilingUpper,
}

// worstFigures and sumFigures say how each per-identity figure becomes the
// scenario's: the worst identity's, or the total.
var (
	worstFigures = []int{fCeiling, fCeilingUpper, fCeilingRatio, fBurst, fSustainedRate, fBoundaryAllowed, fBoundaryAllowedUpper, fAfterFaultCeiling, fAfterFaultCeilingUpper}
	sumFigures   = []int{fRequests, fAllowed, fDenied, fErrors, fDropped, fSlipped, fRaceExcess, fFailOpen, fFailClosed}
)

// maxPerIdentity bounds Result.PerIdentity: past it, only the worst
// identities (highest ceiling, then most allowed) are listed.
const maxPerIdentity = 10_000

func (f *figures) metrics() Metrics {
	m := make(Metrics, numFigures)
	for k := range numFigures {
		if v, ok := f.get(k); ok {
			m[figureNames[k]] = v
		}
	}
	return m
}

type gatewayState struct {
	counts tally
	hist   *hdrhistogram.Histogram
}

// decidedBetween is when record i was decided: exactly at Decided when the
// target said so (moved onto rlctl's clock by its gateway's clock shift),
// else somewhere in [Sent, Received]. A missing Sent falls back on Intended
// and a missing Received on Sent; a reversed pair (a clock step) is put in
// order rather than dropped.
func (a *analyzer) decidedBetween(h *history.History, i int) (s, r int64) {
	sent, recv := h.Sent(i), h.Received(i)
	if t, ok := a.stamp(h, i); ok {
		return t, t
	}
	if sent == history.NoTime {
		sent = h.Intended(i)
	}
	if recv == history.NoTime {
		recv = sent
	}
	if recv < sent {
		sent, recv = recv, sent
	}
	return clampTime(int64(sent)), clampTime(int64(recv))
}

// offsetBounds is the range of clock offsets a set of records allows.
type offsetBounds struct {
	lo, hi int64
	seen   bool
}

func (b *offsetBounds) add(from, to int64) {
	if !b.seen {
		b.lo, b.hi, b.seen = from, to, true
		return
	}
	b.lo, b.hi = max(b.lo, from), min(b.hi, to)
}

// offsetSlack is how far records may disagree and still count as one
// clock: a history keeps times far from their intended instant only to the
// microsecond (or the millisecond, minutes away), and a clock that moves in
// steps (the embedded Redis's TIME) is off by up to one.
const offsetSlack = int64(time.Millisecond)

// fits reports whether one offset fits every record, within offsetSlack.
func (b offsetBounds) fits() bool { return b.lo <= b.hi+offsetSlack }

// nearestZero is the allowed offset closest to zero (the upper bound when
// the records disagree by less than offsetSlack).
func (b offsetBounds) nearestZero() int64 { return min(max(0, b.lo), b.hi) }

// clockShifts finds how far the decision times a target reported (Redis
// TIME, a gateway's own clock) are off rlctl's clock. A decision happened
// between its request's send and receive, so each record bounds the offset
// to [Decided-Received, Decided-Sent]. The simplest explanation wins:
//
//   - one offset that fits every record: the value nearest zero, the same
//     for every gateway (0 on one machine: nothing moves);
//   - else one offset per gateway, when each gateway's records fit one
//     (gateways with clocks of their own);
//   - else (a clock that jitters, like the embedded Redis's TIME, which
//     moves in steps) the median offset, the same for every gateway.
//
// A shared shift never changes how decisions sit relative to one another,
// which is what a limiter deciding by that clock must be judged on. It
// moves them onto rlctl's clock, so they fall in the same windows as the
// requests whose decision time is not known (a gateway's fail-open
// answers, say), which a remote Redis's clock 50 ms ahead would make them
// miss by 50 ms.
func (a *analyzer) clockShifts(cb *clockBounds) {
	per := make([]offsetBounds, len(a.gwNames))
	for g, b := range cb.per {
		if b.seen {
			p := &per[a.denseGateway(uint16(g))]
			if p.seen {
				p.add(b.lo, b.hi)
			} else {
				*p = b
			}
		}
	}
	shared := func(v int64) {
		if v != 0 {
			a.shift = make([]int64, len(a.gwNames))
			for g := range a.shift {
				a.shift[g] = v
			}
		}
	}
	switch {
	case !cb.all.seen:
	case cb.all.fits():
		shared(cb.all.nearestZero())
	case !slices.ContainsFunc(per, func(b offsetBounds) bool { return b.seen && !b.fits() }):
		a.shift = make([]int64, len(a.gwNames))
		for g, b := range per {
			if b.seen {
				a.shift[g] = b.nearestZero()
			}
		}
	default:
		mids := make([]int64, len(cb.sample))
		for k, o := range cb.sample {
			mids[k] = o.from + (o.to-o.from)/2
		}
		slices.Sort(mids)
		shared(mids[len(mids)/2])
	}
	a.trustStamps(cb)
}

// clockBounds gathers, record by record, what clockShifts decides from:
// the offsets every record allows, overall and per gateway as recorded
// (the raw index; clockShifts folds them onto the dense ones), and a
// bounded sample of them for the median.
type clockBounds struct {
	all    offsetBounds
	per    []offsetBounds
	stride int
	sample []sampledOffset
}

// sampledOffset is the range of clock offsets one sampled record allows,
// and its gateway (raw index).
type sampledOffset struct {
	from, to int64
	gateway  uint16
}

func newClockBounds(n int) *clockBounds {
	// The median comes from a bounded sample, so memory stays constant.
	return &clockBounds{stride: max(1, n/4096)}
}

// add takes record i of chunk c, the base-th record of the history.
func (cb *clockBounds) add(c *history.History, i, base int) {
	d, s, r := c.Decided(i), c.Sent(i), c.Received(i)
	if d == history.NoTime || s == history.NoTime || r == history.NoTime || r < s || c.Outcome(i) == decision.Dropped {
		return
	}
	from, to := clampTime(int64(d-r)), clampTime(int64(d-s))
	cb.all.add(from, to)
	g := int(c.Gateway(i))
	if g >= len(cb.per) {
		cb.per = append(cb.per, make([]offsetBounds, g+1-len(cb.per))...)
	}
	cb.per[g].add(from, to)
	if (base+i)%cb.stride == 0 {
		cb.sample = append(cb.sample, sampledOffset{from, to, c.Gateway(i)})
	}
}

// timeLimit bounds every time analysis uses to ±36 years around the run
// start. Real offsets are far smaller; the clamp only keeps sums and
// differences of times from overflowing on a corrupt or hand-made history.
const timeLimit = 1 << 60

func clampTime(v int64) int64 { return min(max(v, -timeLimit), timeLimit) }

// Analyze measures one run's history. It is pure: the same history and
// options always give the same Result.
//
// Figures are per identity (limits are per identity) and the scenario's
// figure (Result.Metrics) is the worst identity's for ceiling,
// ceiling_upper, ceiling_ratio, burst, sustained_rate, boundary_allowed,
// after_fault_ceiling and their upper bounds, and the total for counts,
// slipped, race_excess, fail_open and fail_closed. A figure that does not
// apply is absent: window figures need a limit in Meta, boundary_allowed
// needs Meta.Boundaries, race_excess needs rounds, fault figures need
// Meta.Faults, latency needs a request that ran, retry_after_missing a
// denial.
//
// Definitions, with the allowed requests of one identity, each decided at
// an unknown instant in [Sent, Received] (at Decided when known, shifted
// onto rlctl's clock when the target's clock is off it; see clockShifts):
//
//   - ceiling: max over t of the allowed whose whole interval lies in
//     [t, t+W) - the most a window surely held; ceiling_upper: the same
//     counting every interval that touches [t, t+W). The true sliding
//     maximum lies between them. ceiling_ratio = ceiling / L.
//   - sustained_rate: allowed per second after the run's first window (the
//     whole run when shorter than 2W); burst: the smallest b with every
//     interval [s, e] holding at most b + rate·(e−s) allowed decision times.
//   - slipped: allowed requests a token bucket of the envelope in Options,
//     replayed in decision-time order, would have refused — a definite
//     count: the bucket gets the refill of the identity's widest
//     [Sent, Received] interval as slack, so a limiter that obeys the
//     envelope is never charged with a slip by timing uncertainty.
//   - boundary_allowed: the most allowed surely decided within BoundarySpan
//     of one boundary in Meta.Boundaries; boundary_allowed_upper: the same
//     counting every interval that touches that span.
//   - race_excess: per (identity, round ≥ 0), allowed beyond one.
//   - after_fault_ceiling: the ceiling over windows starting in
//     [At−W, At+For+W] of any fault; after_fault_ceiling_upper: the same
//     for ceiling_upper.
//   - recover_ms: from the end of the last fault to the first answer decided
//     by Redis (By redis or lease, allowed or denied) for a request sent
//     after that end - its Decided, else its Received. When the last fault
//     is a failover (FailoverActions), from its start to the first such
//     answer for a request sent after the election's last undecided one.
//   - election_errors, election_fail_open, election_fail_closed: per
//     failover, the errors and failure-policy answers of the requests sent
//     from its start, each within 1s of the one before, until the next
//     fault (summed); election_ms: from the failover's start to the last
//     of their answers (the longest election).
//   - failover_denied: answers a gateway gave because it detected a
//     failover (on_failover: deny); failover_deny_ms: from the first to
//     the last of them; failover_detect_ms: from the failover's start to
//     the first of them.
//   - on a Redis Cluster (Meta.Shards, and the shard a failover acted on in
//     its Fault.Shard): failed_shard_election_undecided, the undecided
//     requests of the failed shard's identities in its election chain;
//     other_shards_election_undecided, those of the other shards'
//     identities sent during that election (to 1s after its last
//     undecided request or the new primary's first write);
//     failed_shard_after_fault_ceiling and other_shards_after_fault_ceiling,
//     each group's worst after_fault_ceiling (and each's _upper, the worst
//     after_fault_ceiling_upper). Result.PerShard has each
//     shard's, Result.PerEndpoint each endpoint's election figures.
//   - retry_after_missing: the fraction of denials without Retry-After.
//   - latency (p50_ms … max_ms): Intended to Received of every request that
//     ran (dropped ones never did), so a slow target cannot hide queueing.
//   - send_lag_p99_ms: the 99th percentile of Intended to Sent over the
//     same requests - rlctl's own delay in sending, which latency includes.
//     Latency well above it is the target's; latency close to it is the
//     instrument's.
//
// With clients that retried denied requests (records with Attempt > 0),
// per identity, where a reset is a moment the target said the quota would
// be back (a denial's Received + RetryAfter, or a retry's previous answer
// + what it was told):
//
//   - herd_peak: the most requests sent within metric.HerdSpan (100 ms) after one
//     reset, worst identity; against the limit it says whether clients
//     told the same moment came back as a herd.
//   - relimited: the share of answered retries that were denied again.
//   - retry_wait_excess_ms: over admitted retries, the mean of how long
//     each was sent after the earliest admission of its identity decided
//     after its previous answer arrived (0 when none was earlier) - how
//     much later than needed clients came back. The earliest admission is
//     seen only when other requests probed meanwhile, so it is a lower
//     bound.
//   - retry_after_early: of the retries that waited exactly what they were
//     told (within 5 ms or 5%), the share denied although nothing of their
//     identity was admitted since the denial they repeat: the quota was not
//     back when promised, so the hint was early (the header lied). A
//     denial after others took the freed quota is contention, counted by
//     relimited, not here; so this is a definite count, a lower bound.
//
// A history that spilled to disk (see history.History.Spill) gets the same
// Result, computed in a few passes over its chunks with memory bounded
// whatever its length (sorted runs and groups of identities go to scratch
// files beside the spill, removed before it returns); the error is
// reading the history or writing the scratch files. For a history in
// memory it never fails.
func Analyze(h *history.History, opts Options) (Result, error) {
	return analyze(h, opts, parallelSort, spillBudget)
}

// analyze is Analyze with the size from which an identity counts as
// big (see worker.identity) and the spilled analysis's memory budget, so
// tests can drive every path on small inputs.
func analyze(h *history.History, opts Options, bigIdentity int, b budget) (Result, error) {
	if h == nil {
		h = history.New(history.Meta{}, 0)
	}
	a := newAnalyzer(h, opts)
	a.bigIdentity = bigIdentity
	a.budget = b
	defer a.close()
	if err := a.scan(); err != nil {
		return Result{}, err
	}
	if err := a.perIdentity(); err != nil {
		return Result{}, err
	}
	res := a.result()
	if err := a.retryFigures(&res); err != nil {
		return Result{}, err
	}
	return res, nil
}

type analyzer struct {
	h       *history.History
	opts    Options
	n       int
	l       int64 // published count, 0 when unknown
	w       int64 // window in ns, 0 when unknown
	spilled bool  // h is read chunk by chunk from disk (see stream.go)
	budget  budget

	// idMap maps an identity index beyond Meta.Identities' to its dense
	// one when the identity column holds values far beyond (never in a
	// real run); nil means the column is used as is. gwMap likewise.
	idMap   map[uint32]uint32
	idNamed int
	idNames []string
	gwMap   map[uint16]uint16
	gwNamed int
	gwNames []string
	idState []identityState
	gwState []gatewayState

	// In memory only: allowed holds the allowed record indices, grouped
	// by identity; offsets[k] is where identity k's start.
	allowed []int32
	// maybeByID holds, per identity, the errors that may have been
	// admitted (see decision.ByUnanswered); few, so a map, nil when none.
	maybeByID map[uint32][]int32
	dense     []bool // identities left out of allowed (see worker.each)
	offsets   []int
	// Spilled only: the identities' records in groups on disk.
	groups *groups

	start    int64 // earliest time seen (Intended, Sent, Decided)
	end      int64 // latest time seen (Intended, Received, Decided)
	maxRound int32
	hasRound bool

	deniedTotal, missingRetry int64
	// recovered is the first Redis decision after the last fault (see
	// recoverMs), math.MaxInt64 when none.
	recovered int64
	faultEnd  int64

	boundaries []int64
	span       int64 // Meta.BoundarySpan
	faults     []history.Fault

	timeline []int64
	interval int64
	lag      *hdrhistogram.Histogram // Intended to Sent, µs (send_lag_p99_ms)
	fromSent *hdrhistogram.Histogram // Sent to Received, µs (Conduct.FromSent)
	// shift is each gateway's clock shift (see clockShifts); nil when
	// every gateway's decision times fit rlctl's clock as they are.
	shift []int64
	// untrusted marks the gateways whose decision times are not used (see
	// trustStamps); nil when every gateway's are.
	untrusted []bool
	cs        conductScan

	bigIdentity int
	worst       int // identity with the highest ceiling
	sliding     []Point
}

func newAnalyzer(h *history.History, opts Options) *analyzer {
	a := &analyzer{h: h, opts: opts, n: h.Len(), maxRound: -1, spilled: h.Spilled(), recovered: math.MaxInt64}
	if h.Meta.Limit.Count > 0 && h.Meta.Limit.Window > 0 {
		a.l, a.w = h.Meta.Limit.Count, min(int64(h.Meta.Limit.Window), timeLimit)
	}
	for _, b := range h.Meta.Boundaries {
		a.boundaries = append(a.boundaries, clampTime(int64(b)))
	}
	slices.Sort(a.boundaries)
	a.span = clampTime(int64(h.Meta.BoundarySpan))
	for _, f := range h.Meta.Faults {
		f.At = time.Duration(clampTime(int64(f.At)))
		f.For = time.Duration(clampTime(int64(f.For)))
		a.faults = append(a.faults, f)
	}
	if len(a.faults) > 0 {
		last := a.faults[0]
		for _, f := range a.faults[1:] {
			if f.At >= last.At {
				last = f
			}
		}
		a.faultEnd = int64(last.At + last.For)
	}
	return a
}

// chunks calls fn with each piece of the history and the index of its
// first record: the history itself when it is in memory.
func (a *analyzer) chunks(fn func(c *history.History, base int)) error {
	base := 0
	return a.h.Chunks(func(c *history.History) error {
		fn(c, base)
		base += c.Len()
		return nil
	})
}

func (a *analyzer) gateway(c *history.History, i int) uint16 {
	return a.denseGateway(c.Gateway(i))
}

func (a *analyzer) denseGateway(v uint16) uint16 {
	if a.gwMap != nil && int(v) >= a.gwNamed {
		return a.gwMap[v]
	}
	return v
}

func (a *analyzer) identity(c *history.History, i int) uint32 {
	return a.denseIdentity(c.Identity(i))
}

func (a *analyzer) denseIdentity(v uint32) uint32 {
	if a.idMap != nil && int(v) >= a.idNamed {
		return a.idMap[v]
	}
	return v
}

// countDrops counts the dropped requests tallied without a record (see
// history.Drops) as scanLatency and scanIdentities count those with one:
// in their identity's and gateway's outcomes, and in the run's span.
func (a *analyzer) countDrops() {
	d := &a.h.Meta.Drops
	for k, c := range d.Identity {
		if c > 0 {
			a.idState[a.denseIdentity(uint32(k))].counts[decision.Dropped] += c
		}
	}
	for g, c := range d.Gateway {
		if c > 0 {
			a.gwState[a.denseGateway(uint16(g))].counts[decision.Dropped] += c
		}
	}
	if n := len(d.Slices); n > 0 {
		a.start = min(a.start, clampTime(int64(d.Slices[0].From)))
		a.end = max(a.end, clampTime(int64(d.Slices[n-1].To)))
	}
}

// lastCounted is the highest index with a non-zero count, -1 when none.
func lastCounted(counts []int64) int {
	for k := len(counts) - 1; k >= 0; k-- {
		if counts[k] != 0 {
			return k
		}
	}
	return -1
}

// densify gives the unnamed indices (at or beyond len(names)) that a
// corrupt or hand-made history can scatter up to 2^32 dense ones, in order
// of first appearance, named "#<index>": it returns the map and the
// extended names.
func densify[T uint16 | uint32](v T, dense map[T]T, names []string) []string {
	if _, ok := dense[v]; !ok {
		dense[v] = T(len(names))
		names = append(names, fmt.Sprintf("#%d", v))
	}
	return names
}

// scan makes the passes over every record before the per-identity work:
// the indices in use and the clocks' offsets; then tallies, latency, the
// run's span and recovery; then the grouping of the allowed by identity.
func (a *analyzer) scan() error {
	cb, wt, err := a.scanIndices()
	if err != nil {
		return err
	}
	a.idState = make([]identityState, len(a.idNames))
	a.gwState = make([]gatewayState, len(a.gwNames))
	a.clockShifts(cb)
	if err := a.scanTallies(wt); err != nil {
		return err
	}
	a.sizeTimeline()
	if a.spilled {
		return a.groups.finish()
	}
	a.groupAllowed()
	return nil
}

// scanIndices names every identity and gateway index the records and the
// drops use (dense ones for sparse unnamed indices, see densify) and
// gathers the clocks' offsets; for a spilled history it also weighs each
// identity, which the grouping needs before the pass that writes it (see
// stream.go).
func (a *analyzer) scanIndices() (*clockBounds, *weights, error) {
	h := a.h
	a.idNames = slices.Clone(h.Meta.Identities)
	a.gwNames = slices.Clone(h.Meta.Gateways)
	a.idNamed, a.gwNamed = len(a.idNames), len(a.gwNames)
	maxID, maxGW := -1, len(h.Meta.Gateways)-1
	cb := newClockBounds(a.n)
	wt := &weights{}
	err := a.chunks(func(c *history.History, base int) {
		for i := range c.Len() {
			v := int(c.Identity(i))
			maxID = max(maxID, v)
			maxGW = max(maxGW, int(c.Gateway(i)))
			cb.add(c, i, base)
			if a.spilled && v < a.idNamed+a.n {
				wt.add(c, i, v)
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	// Dropped requests tallied without a record count like records.
	drops := &h.Meta.Drops
	maxID = max(maxID, lastCounted(drops.Identity))
	maxGW = max(maxGW, lastCounted(drops.Gateway))
	sparseID := maxID >= len(a.idNames)+a.n
	sparseGW := maxGW >= len(a.gwNames)+a.n
	if sparseID || sparseGW {
		if wt, err = a.densifyIndices(sparseID, sparseGW); err != nil {
			return nil, nil, err
		}
	}
	for k := len(a.idNames); k <= maxID && !sparseID; k++ {
		a.idNames = append(a.idNames, fmt.Sprintf("#%d", k))
	}
	for k := len(a.gwNames); k <= maxGW && !sparseGW; k++ {
		a.gwNames = append(a.gwNames, fmt.Sprintf("#%d", k))
	}
	return cb, wt, nil
}

// densifyIndices gives the sparse unnamed identity (sparseID) or gateway
// (sparseGW) indices of the records and the drops dense ones, in order of
// first appearance, and weighs a spilled history's identities again by
// their dense indices.
func (a *analyzer) densifyIndices(sparseID, sparseGW bool) (*weights, error) {
	if sparseID {
		a.idMap = map[uint32]uint32{}
	}
	if sparseGW {
		a.gwMap = map[uint16]uint16{}
	}
	wt := &weights{}
	err := a.chunks(func(c *history.History, _ int) {
		for i := range c.Len() {
			if v := c.Identity(i); sparseID && int(v) >= a.idNamed {
				a.idNames = densify(v, a.idMap, a.idNames)
			}
			if v := c.Gateway(i); sparseGW && int(v) >= a.gwNamed {
				a.gwNames = densify(v, a.gwMap, a.gwNames)
			}
			if a.spilled {
				wt.add(c, i, int(a.identity(c, i)))
			}
		}
	})
	if err != nil {
		return nil, err
	}
	drops := &a.h.Meta.Drops
	for k, c := range drops.Identity {
		if sparseID && c > 0 && k >= a.idNamed {
			a.idNames = densify(uint32(k), a.idMap, a.idNames)
		}
	}
	for k, c := range drops.Gateway {
		if sparseGW && c > 0 && k >= a.gwNamed {
			a.gwNames = densify(uint16(k), a.gwMap, a.gwNames)
		}
	}
	return wt, nil
}

// scanTallies counts the outcomes per identity and per gateway, the
// latencies and the run's span, and writes a spilled history's groups
// (weighed by wt).
func (a *analyzer) scanTallies(wt *weights) error {
	// Two halves of the work read different columns, so they run side by
	// side without sharing anything: latency per gateway and the run's
	// span on one side, per-identity tallies on the other.
	a.lag, a.fromSent = NewLatencyHistogram(), NewLatencyHistogram()
	a.start, a.end = math.MaxInt64, math.MinInt64
	a.countDrops()
	if a.spilled {
		if err := a.newGroups(wt); err != nil {
			return err
		}
	}
	err := a.chunks(func(c *history.History, base int) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.scanLatency(c)
		}()
		a.scanIdentities(c, base)
		if a.spilled {
			a.groupChunk(c)
		}
		wg.Wait()
	})
	if err != nil {
		return err
	}
	if a.start > a.end { // nothing seen
		a.start, a.end = 0, 0
	}
	return nil
}

// sizeTimeline chooses the timeline's interval (Options.Interval, else a
// round hundredth of the run) and allocates it.
func (a *analyzer) sizeTimeline() {
	a.interval = int64(a.opts.Interval)
	if a.interval <= 0 {
		a.interval = int64(niceInterval(time.Duration(a.end - a.start)))
	}
	// A tiny Interval over a long run would chart millions of points;
	// coarsen it to at most maxTimeline.
	for (a.end-a.start)/a.interval >= maxTimeline {
		a.interval *= 2
	}
	a.timeline = make([]int64, (a.end-a.start)/a.interval+1)
}

// groupAllowed groups an in-memory history's allowed records by identity
// (a counting sort), so the per-identity work touches no map and sorts
// only short lists; dense identities are left out (see worker.each).
func (a *analyzer) groupAllowed() {
	h := a.h
	a.offsets = make([]int, len(a.idState)+1)
	a.dense = make([]bool, len(a.idState))
	for k, st := range a.idState {
		c := int(st.counts[decision.Allowed])
		a.dense[k] = c >= a.bigIdentity && c*denseShare >= a.n
		if a.dense[k] {
			c = 0 // visited by filtering the history, not indexed
		}
		a.offsets[k+1] = a.offsets[k] + c
	}
	a.allowed = make([]int32, a.offsets[len(a.idState)])
	fill := slices.Clone(a.offsets[:len(a.idState)])
	for i := range a.n {
		if h.Outcome(i) == decision.Allowed {
			id := a.identity(h, i)
			if a.dense[id] {
				continue
			}
			a.allowed[fill[id]] = int32(i)
			fill[id]++
		}
	}
}

// scanLatency records every request's latency in its gateway's histogram
// and widens the run's span to chunk c's records.
func (a *analyzer) scanLatency(c *history.History) {
	start, end := a.start, a.end
	for i := range c.Len() {
		o := c.Outcome(i)
		in := clampTime(int64(c.Intended(i)))
		start = min(start, in)
		end = max(end, in)
		gs := &a.gwState[a.gateway(c, i)]
		if gs.hist == nil {
			gs.hist = NewLatencyHistogram()
		}
		gs.counts[o]++
		if o == decision.Dropped {
			continue // never ran: no latency, and its times mean nothing
		}
		recv, sent := c.Received(i), c.Sent(i)
		if recv != history.NoTime {
			r := clampTime(int64(recv))
			end = max(end, r)
			recordMicros(gs.hist, (r-in)/1000)
			if sent != history.NoTime {
				recordMicros(a.fromSent, (r-clampTime(int64(sent)))/1000)
			}
		}
		// A target's clock may put Sent or Decided outside [Intended,
		// Received]; the run's span covers them so no decision falls off
		// the charts.
		if sent != history.NoTime {
			s := clampTime(int64(sent))
			start = min(start, s)
			recordMicros(a.lag, (s-in)/1000)
		}
		if c.Decided(i) != history.NoTime {
			d, _ := a.decidedBetween(c, i)
			start, end = min(start, d), max(end, d)
		}
	}
	a.start, a.end = start, end
}

// scanIdentities tallies outcomes per identity, the run-wide counts that
// need no latency and the first Redis decision after the last fault, over
// chunk c (whose first record is the history's base-th).
func (a *analyzer) scanIdentities(c *history.History, base int) {
	for i := range c.Len() {
		o := c.Outcome(i)
		id := a.identity(c, i)
		st := &a.idState[id]
		st.counts[o]++
		by := c.By(i)
		switch by {
		case decision.ByFailOpen:
			st.failOpen++
		case decision.ByFailClosed:
			st.failClosed++
		case decision.ByUnanswered:
			if o == decision.Error {
				st.maybe++
				if !a.spilled {
					if a.maybeByID == nil {
						a.maybeByID = map[uint32][]int32{}
					}
					a.maybeByID[id] = append(a.maybeByID[id], int32(base+i))
				}
			}
		}
		if o == decision.Denied {
			a.deniedTotal++
			if c.RetryAfter(i) == history.NoTime {
				a.missingRetry++
			}
		}
		if r := c.Round(i); r >= 0 {
			a.hasRound = true
			a.maxRound = max(a.maxRound, r)
		}
		a.conduct(c, i, id)
		if a.faults != nil && (o == decision.Allowed || o == decision.Denied) && (by == decision.ByRedis || by == decision.ByLease) {
			// A known decision time is a point (s == r); otherwise the
			// answer's arrival is the latest it can have been decided.
			if s, r := a.decidedBetween(c, i); s >= a.faultEnd {
				a.recovered = min(a.recovered, r)
			}
		}
	}
}

// envelope is the (burst, rate per second) slipped is measured against, and
// whether there is one.
func (a *analyzer) envelope() (float64, float64, bool) {
	b, r := a.opts.EnvelopeBurst, a.opts.EnvelopeRate
	if b == 0 && r == 0 {
		if a.l == 0 {
			return 0, 0, false
		}
		return float64(a.l), float64(a.l) / (float64(a.w) / 1e9), true
	}
	return b, r, true
}

// perIdentity computes every per-identity figure. Identities are
// independent, so workers (one per CPU) take them in turn (a spilled
// history's: a group of them at a time), each with its own scratch sized
// for the largest identity and its own timeline.
func (a *analyzer) perIdentity() error {
	units := len(a.idState)
	if a.spilled {
		units = len(a.groups.allowed.ranges)
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), units))
	ws := make([]*worker, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for j := range ws {
		w := a.newWorker()
		ws[j] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= units || w.err != nil {
					return
				}
				if a.spilled {
					w.group(k)
				} else {
					w.identity(k, w.eachInMemory(k))
				}
			}
		}()
	}
	wg.Wait()
	best := -1
	var err error
	for _, w := range ws {
		w.close()
		err = cmp.Or(err, w.err)
		for b, c := range w.timeline {
			a.timeline[b] += c
		}
		// The lowest index among the highest ceilings, whichever worker
		// saw it, so the result does not depend on scheduling.
		if w.bestCeiling > best || (w.bestCeiling == best && w.worst < a.worst) {
			best, a.worst, a.sliding = w.bestCeiling, w.worst, w.sliding
		}
	}
	return err
}

// worker holds one goroutine's scratch for perIdentity.
type worker struct {
	a *analyzer
	// One identity's allowed requests: the starts and ends of their
	// decision intervals, their decision times, the long intervals (see
	// intervals) and the errors that may have been admitted.
	sent, recv, times, longSent, longRecv, maybeSent, maybeRecv sorter
	perBoundary, perBoundaryUpper                               []int
	perRound                                                    []int32
	touched                                                     []int32
	timeline                                                    []int64
	bestCeiling, worst                                          int
	sink                                                        time.Duration // keeps the prefetching loads alive
	sliding                                                     []Point       // the worst identity's Sliding so far
	burstEnv, rateEnv                                           float64
	hasEnv, raceApplies                                         bool
	// Spilled only: a group's records, read and then grouped by identity.
	recs, byID []allowedRec
	block      []byte
	err        error
}

func (a *analyzer) newWorker() *worker {
	w := &worker{
		a:           a,
		timeline:    make([]int64, len(a.timeline)),
		bestCeiling: -1,
		// Round also marks the boundary pattern's batches (Meta.Boundaries
		// set, no race rounds): those are not race rounds.
		raceApplies: a.h.Meta.Rounds > 0 || (a.hasRound && len(a.h.Meta.Boundaries) == 0),
	}
	for _, s := range w.sorters() {
		if a.spilled {
			s.limit, s.dir = a.budget.run, a.h.SpillDir()
		}
	}
	w.burstEnv, w.rateEnv, w.hasEnv = a.envelope()
	if len(a.boundaries) > 0 {
		w.perBoundary = make([]int, len(a.boundaries))
		w.perBoundaryUpper = make([]int, len(a.boundaries))
	}
	if a.hasRound {
		w.perRound = make([]int32, a.maxRound+1)
	}
	return w
}

func (w *worker) sorters() []*sorter {
	return []*sorter{&w.sent, &w.recv, &w.times, &w.longSent, &w.longRecv, &w.maybeSent, &w.maybeRecv}
}

// close removes the sorters' scratch files and keeps their first error.
func (w *worker) close() {
	for _, s := range w.sorters() {
		w.err = cmp.Or(w.err, s.err)
		s.close()
	}
}

// visitFn takes one allowed record of an identity, its decision interval
// [s, r] and round, or with maybe set an error that may have been admitted.
type visitFn func(s, r int64, round int32, maybe bool)

// eachInMemory visits identity k's records in a history in memory.
func (w *worker) eachInMemory(k int) func(visitFn) {
	a, h := w.a, w.a.h
	return func(visit visitFn) {
		w.each(k, func(i int) {
			s, r := a.decidedBetween(h, i)
			visit(s, r, h.Round(i), false)
		})
		for _, i := range a.maybeByID[uint32(k)] {
			s, r := a.decidedBetween(h, int(i))
			visit(s, r, history.NoRound, true)
		}
	}
}

// each calls visit with every allowed record of identity k, in history
// order: from the grouped index, or for a dense identity (one holding a
// large share of the run) by filtering the history itself, which saves the
// index's 4 bytes per record where it would be largest.
func (w *worker) each(k int, visit func(i int)) {
	a, h := w.a, w.a.h
	if a.dense[k] {
		for i := range a.n {
			if h.Outcome(i) == decision.Allowed && a.identity(h, i) == uint32(k) {
				visit(i)
			}
		}
		return
	}
	idx := a.allowed[a.offsets[k]:a.offsets[k+1]]
	var ahead time.Duration
	for j, i := range idx {
		// The identity's records are scattered through the history, so
		// each is a cache miss. Touching the one prefetchDistance ahead
		// starts its miss early, and the CPU overlaps the waits.
		if j+prefetchDistance < len(idx) {
			ahead += h.Intended(int(idx[j+prefetchDistance]))
		}
		visit(int(i))
	}
	w.sink += ahead
}

// mid is the single instant used where one is needed (envelope, slipped,
// timeline): Decided when known, else the middle of [Sent, Received].
func mid(s, r int64) int64 { return s + (r-s)/2 }

// identity computes identity k's figures into a.idState[k].fig from its
// records, which each visits (it may be called twice).
func (w *worker) identity(k int, each func(visitFn)) {
	a := w.a
	st := &a.idState[k]
	m := &st.fig
	countFigures(m, st, len(a.faults) > 0)

	// Scratch grows to the largest identity this worker meets, and no
	// further (a spilled history's, to the budget: past it, sorted runs go
	// to disk). A big identity (a fail-open run's millions of allowed)
	// gets its decision times in a second gather into the sent sorter once
	// the ceiling is done: a third less scratch where scratch is largest,
	// for one more pass where a pass is cheapest relative to its sorts.
	count := int(st.counts[decision.Allowed])
	big := count >= a.bigIdentity
	g := w.gather(count, big, each)
	if w.perBoundary != nil {
		m.set(fBoundaryAllowed, float64(g.bestBoundary))
		m.set(fBoundaryAllowedUpper, float64(g.bestBoundaryUpper))
	}
	if w.raceApplies {
		m.set(fRaceExcess, float64(w.raceExcess()))
	}
	newBest := false
	if a.w > 0 {
		newBest = w.windowFigures(k, m, big, g.long)
	}
	times := w.decisionTimes(big, each)
	if newBest {
		// This identity is the worst so far: keep its sliding-window
		// curve, while its sorted times are at hand.
		w.sliding = slidingSeries(times.cursor(), times.cursor(), a.w, a.start, a.end, a.interval)
	}
	// The long-run rate, and the burst above it, need a window after the
	// first: a shorter run's admissions are mostly its first burst.
	if a.w > 0 && a.end-a.start >= 2*a.w {
		rate := sustainedRate(times.cursor(), times.n, a.start, a.end, a.w)
		m.set(fSustainedRate, rate)
		m.set(fBurst, burstFor(times.cursor(), rate))
	}
	if w.hasEnv {
		m.set(fSlipped, float64(w.countSlipped(times, g.widest)))
	}
	w.addTimeline(times)
}

// countFigures sets the identity's outcome counts, and with faults (or any
// fail-open or fail-closed decision) how many failed open and closed.
func countFigures(m *figures, st *identityState, faults bool) {
	m.set(fRequests, float64(st.counts[decision.Allowed]+st.counts[decision.Denied]+st.counts[decision.Error]+st.counts[decision.Dropped]+st.counts[decision.Unknown]))
	m.set(fAllowed, float64(st.counts[decision.Allowed]))
	m.set(fDenied, float64(st.counts[decision.Denied]))
	m.set(fErrors, float64(st.counts[decision.Error]))
	m.set(fDropped, float64(st.counts[decision.Dropped]))
	if st.failOpen > 0 || st.failClosed > 0 || faults {
		m.set(fFailOpen, float64(st.failOpen))
		m.set(fFailClosed, float64(st.failClosed))
	}
}

// gathered is what gather learns besides the sorters' contents.
type gathered struct {
	long         int   // intervals at least a window long
	widest       int64 // longest [Sent, Received]: how far a decision time may be off
	bestBoundary int   // most allowed surely around any one boundary
	// bestBoundaryUpper counts too those that may have been (see
	// boundaryUpper).
	bestBoundaryUpper int
}

// gather visits the identity's allowed records once (in memory they are
// scattered through the history, so each visit is a cache miss) into the
// worker's sorters: the interval ends, the long intervals, the errors that
// may have been admitted and, unless big, the decision times. On the way
// it counts the allowed around each boundary and in each race round (see
// raceExcess).
func (w *worker) gather(count int, big bool, each func(visitFn)) gathered {
	a := w.a
	for _, s := range w.sorters() {
		s.reset()
	}
	sent, recv, times := &w.sent, &w.recv, &w.times
	sent.grow(count)
	recv.grow(count)
	if !big {
		times.grow(count)
	}
	long := 0
	if w.perBoundary != nil {
		clear(w.perBoundary)
		clear(w.perBoundaryUpper)
	}
	span := a.span
	bestBoundary, bestBoundaryUpper := 0, 0
	touched := w.touched[:0]
	var widest int64
	each(func(s, r int64, rd int32, maybe bool) {
		if maybe {
			w.maybeSent.add(s)
			w.maybeRecv.add(r)
			if w.perBoundary != nil {
				// It may have been an admission: possibly near a boundary.
				bestBoundaryUpper = a.tallyBoundaries(w.perBoundaryUpper, s-span, r+span, bestBoundaryUpper)
			}
			return
		}
		sent.add(s)
		recv.add(r)
		widest = max(widest, r-s)
		if !big {
			times.add(mid(s, r))
		}
		if a.w > 0 && r-s >= a.w {
			long++
			w.longSent.add(s)
			w.longRecv.add(r)
		}
		if w.perBoundary != nil {
			// Surely near B: B-span <= s and r <= B+span. Possibly near
			// it: s <= B+span and r >= B-span.
			bestBoundary = a.tallyBoundaries(w.perBoundary, r-span, s+span, bestBoundary)
			bestBoundaryUpper = a.tallyBoundaries(w.perBoundaryUpper, s-span, r+span, bestBoundaryUpper)
		}
		if a.hasRound && rd >= 0 {
			if w.perRound[rd] == 0 {
				touched = append(touched, rd)
			}
			w.perRound[rd]++
		}
	})
	w.touched = touched
	return gathered{long: long, widest: widest, bestBoundary: bestBoundary, bestBoundaryUpper: bestBoundaryUpper}
}

// tallyBoundaries adds one to counts at every boundary B with lo <= B <=
// hi, and returns the highest count that reaches, or best when higher.
func (a *analyzer) tallyBoundaries(counts []int, lo, hi int64, best int) int {
	for j := sort.Search(len(a.boundaries), func(j int) bool { return a.boundaries[j] >= lo }); j < len(a.boundaries) && a.boundaries[j] <= hi; j++ {
		counts[j]++
		best = max(best, counts[j])
	}
	return best
}

// raceExcess is how many of the identity's allowed requests were beyond
// the first in their race round, from gather's counts, which it clears.
func (w *worker) raceExcess() int {
	excess := 0
	for _, rd := range w.touched {
		excess += int(w.perRound[rd]) - 1
		w.perRound[rd] = 0
	}
	return excess
}

// windowFigures sets the ceiling bounds over every window, and the
// definite ceiling over the windows around each fault, from the gathered
// intervals (long of them at least a window long), which it sorts (and
// the decision times, unless big). It reports whether identity k's
// ceiling is the highest this worker has seen.
func (w *worker) windowFigures(k int, m *figures, big bool, long int) (newBest bool) {
	a := w.a
	sent, recv := &w.sent, &w.recv
	if big {
		sortAll(sent, recv)
	} else {
		sortAll(sent, recv, &w.times)
	}
	w.longSent.sort()
	w.longRecv.sort()
	iv := intervals{sent: sent.cursor, recv: recv.cursor, longSent: w.longSent.cursor, longRecv: w.longRecv.cursor, long: long}
	if w.maybeSent.n > 0 {
		w.maybeSent.sort()
		w.maybeRecv.sort()
	}
	lower, upper := definite(iv, a.w, minTime, maxTime), w.upperCeiling(iv, minTime, maxTime)
	m.set(fCeiling, float64(lower))
	m.set(fCeilingUpper, float64(upper))
	m.set(fCeilingRatio, float64(lower)/float64(a.l))
	if lower > w.bestCeiling {
		w.bestCeiling, w.worst = lower, k
		newBest = true
	}
	if len(a.faults) > 0 {
		lower, upper := w.afterFaultCeiling(iv)
		m.set(fAfterFaultCeiling, float64(lower))
		m.set(fAfterFaultCeilingUpper, float64(upper))
	}
	return newBest
}

// afterFaultCeiling is the highest definite count, and the highest
// possible one (upperCeiling), over the windows that overlap a fault (from
// a window before it starts to a window after it ends), across the run's
// faults.
func (w *worker) afterFaultCeiling(iv intervals) (lower, upper int) {
	a := w.a
	for _, f := range a.faults {
		lo, hi := a.afterFaultSpan(f)
		lower = max(lower, definite(iv, a.w, lo, hi))
		upper = max(upper, w.upperCeiling(iv, lo, hi))
	}
	return lower, upper
}

// afterFaultSpan is where the windows after_fault_ceiling looks at start:
// from one W before f began to one W after it ended (Fault.End: a real
// failover ends when the new primary took its first write, or the old
// one, still taking writes, was demoted, which may be long after it
// began): the counts it lost are spent in the window after that.
func (a *analyzer) afterFaultSpan(f history.Fault) (lo, hi int64) {
	return int64(f.At) - a.w, int64(f.End()) + a.w
}

// upperCeiling is the most of the identity's allowed requests whose
// intervals touch one window [t, t+W), t in [lo, hi]. Errors that may have
// been admitted (w.maybeSent and maybeRecv, sorted) can only raise it:
// each counts as possibly allowed within its interval.
func (w *worker) upperCeiling(iv intervals, lo, hi int64) int {
	if w.maybeSent.n == 0 {
		return maxOverlap(iv.sent(), 1-w.a.w, iv.recv(), lo, hi)
	}
	return maxOverlap(mergeCursors(iv.sent(), w.maybeSent.cursor()), 1-w.a.w,
		mergeCursors(iv.recv(), w.maybeRecv.cursor()), lo, hi)
}

// decisionTimes returns the identity's decision times sorted: gathered
// already (and sorted by windowFigures when there is a window), or for a
// big identity gathered now into the sent sorter, whose intervals are
// done with.
func (w *worker) decisionTimes(big bool, each func(visitFn)) *sorter {
	times := &w.times
	switch {
	case big:
		times = &w.sent
		times.reset()
		each(func(s, r int64, _ int32, maybe bool) {
			if !maybe {
				times.add(mid(s, r))
			}
		})
		times.sort()
	case w.a.w <= 0:
		times.sort()
	}
	return times
}

// countSlipped counts the sorted decision times an envelope bucket refuses
// (see slipped), with the slack widest (the longest interval) allows.
func (w *worker) countSlipped(times *sorter, widest int64) int {
	// Decision times are estimates within half an interval each, so two
	// of them can sit closer than the true ones by up to the widest
	// interval: a bucket that much fuller still holds any history a
	// correct limiter could have made, and what it refuses certainly
	// slipped.
	slack := w.rateEnv * float64(widest) / 1e9
	return slipped(times.cursor(), w.burstEnv+slack, w.rateEnv)
}

// addTimeline counts the sorted decision times into the worker's timeline.
func (w *worker) addTimeline(times *sorter) {
	a := w.a
	ts := times.cursor()
	for t, ok := ts.next(); ok; t, ok = ts.next() {
		b := (t - a.start) / a.interval
		if b >= 0 && b < int64(len(w.timeline)) {
			w.timeline[b]++
		}
	}
}

// denseShare: an identity holding at least 1/denseShare of all records as
// allowed ones is visited by filtering the history instead of through the
// index. At most denseShare identities can be dense, so at most that many
// extra passes.
const denseShare = 16

// prefetchDistance is how many records ahead the gather touches.
const prefetchDistance = 8

// parallelSort is the size from which sortAll sorts its slices side by
// side.
const parallelSort = 1 << 16

// listed returns the identities Result.PerIdentity lists, in Meta order:
// all of them, or past maxPerIdentity the worst ones.
func (a *analyzer) listed() []int {
	ks := make([]int, len(a.idState))
	for k := range ks {
		ks[k] = k
	}
	if len(ks) <= maxPerIdentity {
		return ks
	}
	key := func(k int) (float64, float64) {
		f := &a.idState[k].fig
		c, _ := f.get(fCeiling)
		al, _ := f.get(fAllowed)
		return c, al
	}
	slices.SortStableFunc(ks, func(x, y int) int {
		cx, ax := key(x)
		cy, ay := key(y)
		if c := cmp.Compare(cy, cx); c != 0 {
			return c
		}
		return cmp.Compare(ay, ax)
	})
	ks = ks[:maxPerIdentity]
	slices.Sort(ks)
	return ks
}

func (a *analyzer) result() Result {
	res := Result{Metrics: Metrics{}, Interval: time.Duration(a.interval), Conduct: a.conductResult()}
	var total figures
	for k := range numFigures {
		if k <= fDropped { // counts apply even to an empty run
			total.set(k, 0)
		}
	}
	for k := range a.idState {
		f := &a.idState[k].fig
		for _, j := range worstFigures {
			if v, ok := f.get(j); ok {
				if cur, seen := total.get(j); !seen || v > cur {
					total.set(j, v)
				}
			}
		}
		for _, j := range sumFigures {
			if v, ok := f.get(j); ok {
				cur, _ := total.get(j)
				total.set(j, cur+v)
			}
		}
	}
	for name, v := range total.metrics() {
		res.Metrics[name] = v
	}
	for _, k := range a.listed() {
		res.PerIdentity = append(res.PerIdentity, IdentityResult{Identity: a.idNames[k], Metrics: a.idState[k].fig.metrics()})
	}
	res.PerIdentityOmitted = len(a.idState) - len(res.PerIdentity)
	if a.w > 0 && len(a.idState) == 0 {
		res.Metrics[metric.Ceiling], res.Metrics[metric.CeilingUpper], res.Metrics[metric.CeilingRatio] = 0, 0, 0
	}
	if a.deniedTotal > 0 {
		res.Metrics[metric.RetryAfterMissing] = float64(a.missingRetry) / float64(a.deniedTotal)
	}
	if len(a.faults) > 0 {
		if _, ok := res.Metrics[metric.FailOpen]; !ok {
			res.Metrics[metric.FailOpen], res.Metrics[metric.FailClosed] = 0, 0
		}
		// After a failover, recover_ms is failoverFigures' (see
		// partFigures); after any other fault, recoverMs's.
		a.failoverFigures(&res)
		if !isFailover(a.faults[a.lastFault()]) {
			if v, ok := a.recoverMs(); ok {
				res.Metrics[metric.RecoverMs] = v
			}
		}
	}

	// Latency: per gateway, then all gateways merged (exact: same geometry).
	overall := NewLatencyHistogram()
	for g, gs := range a.gwState {
		gr := GatewayResult{
			Gateway: a.gwNames[g], Requests: gs.counts[decision.Allowed] + gs.counts[decision.Denied] + gs.counts[decision.Error] + gs.counts[decision.Dropped] + gs.counts[decision.Unknown],
			Allowed: gs.counts[decision.Allowed], Denied: gs.counts[decision.Denied],
			Errors: gs.counts[decision.Error], Dropped: gs.counts[decision.Dropped],
		}
		if gs.hist != nil && gs.hist.TotalCount() > 0 {
			lm := LatencyMetrics(gs.hist)
			gr.P50Millis, gr.P90Millis, gr.P99Millis, gr.P999Millis, gr.MaxMillis = lm[metric.P50], lm[metric.P90], lm[metric.P99], lm[metric.P999], lm[metric.Max]
			overall.Merge(gs.hist)
		}
		res.PerGateway = append(res.PerGateway, gr)
	}
	lm, curve := latency(overall, true)
	for name, v := range lm {
		res.Metrics[name] = v
	}
	if overall.TotalCount() > 0 {
		res.Percentiles = curve
	}
	if a.lag != nil && a.lag.TotalCount() > 0 {
		res.Metrics[metric.SendLagP99] = ms(a.lag.ValueAtPercentile(99))
	}

	if a.n > 0 {
		for b, c := range a.timeline {
			res.Timeline = append(res.Timeline, Point{At: time.Duration(a.start + int64(b)*a.interval), Value: float64(c)})
		}
		res.Sliding = a.sliding
	}
	return res
}

// recoverMs measures the last fault's recovery; false when Redis never
// decided again.
func (a *analyzer) recoverMs() (float64, bool) {
	if a.recovered == math.MaxInt64 {
		return 0, false
	}
	return float64(a.recovered-a.faultEnd) / 1e6, true
}

// slidingSeries is the trailing-window allowed count (t-w, t] over the run,
// one point per step. Each point is the highest count reached within its
// step (at an allowed request or at the step's end), so the chart's peak is
// the true peak, not whatever a sample happened to hit.
//
// lead and lag are two cursors over the same sorted times: the window's
// front and back.
func slidingSeries(lead, lag *cursor, w, start, end, step int64) []Point {
	var out []Point
	lo, hi := 0, 0 // the lo-th to the hi-th times are in the trailing window
	for at := start; ; at += step {
		stepEnd := at + step
		best := 0
		for t, ok := lead.peek(); ok && t < stepEnd; t, ok = lead.peek() {
			lead.i++
			hi++
			for l, ok := lag.peek(); ok && l <= t-w; l, ok = lag.peek() {
				lag.i++
				lo++
			}
			best = max(best, hi-lo)
		}
		for lo < hi {
			if l, ok := lag.peek(); !ok || l > stepEnd-w {
				break
			}
			lag.i++
			lo++
		}
		best = max(best, hi-lo)
		out = append(out, Point{At: time.Duration(at), Value: float64(best)})
		_, more := lead.peek()
		if (stepEnd > end && !more) || len(out) > maxTimeline {
			break
		}
	}
	return out
}

// maxTimeline bounds the number of Timeline points.
const maxTimeline = 100_000

// niceInterval is span/100 rounded up to 1, 2 or 5 times a power of ten,
// at least a millisecond.
func niceInterval(span time.Duration) time.Duration {
	raw := span / 100
	for unit := time.Millisecond; ; unit *= 10 {
		for _, f := range []time.Duration{1, 2, 5} {
			if d := f * unit; d >= raw {
				return d
			}
		}
	}
}
