package traffic

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/workload"
)

// raceNames are the race pattern's identities: a fresh set per round, so
// every round starts from an empty quota ("race-<round>-<i>").
func raceNames(rounds, identities int) []string {
	names := make([]string, 0, rounds*identities)
	for r := range rounds {
		for i := range identities {
			names = append(names, fmt.Sprintf("race-%d-%d", r, i))
		}
	}
	return names
}

// epochAtOrAfter is the first offset at or after off where a window of
// length w aligned to the Unix epoch starts.
func (e *engine) epochAtOrAfter(off, w time.Duration) time.Duration {
	abs := e.start.UnixNano() + int64(off)
	b := abs / int64(w) * int64(w)
	if b < abs {
		b += int64(w)
	}
	return time.Duration(b - e.start.UnixNano())
}

// nearEpoch reports whether offset off lies within tol of an epoch-aligned
// boundary of windows of length w.
func (e *engine) nearEpoch(off, w, tol time.Duration) bool {
	next := e.epochAtOrAfter(off, w)
	return next-off <= tol || off-(next-w) <= tol
}

// decidedAt is the best estimate of when the target decided r: its own
// timestamp when it gave one, else the middle of the round trip.
func decidedAt(r history.Record) time.Duration {
	if r.Decided != history.NoTime {
		return r.Decided
	}
	return r.Sent + (r.Received-r.Sent)/2
}

// runRace runs Plan.Rounds rounds. Each round takes fresh identities, fills
// each to one below the limit (L−1 requests), then releases one request per
// identity through every gateway at the same instant. A correct limiter lets
// exactly one of each identity's released requests through; the released
// records carry Round so analysis can count the excess.
func (e *engine) runRace() {
	L, W := e.p.Limit.Count, e.p.Limit.Window
	gws := len(e.t.Gateways())
	n := e.p.Identities
	// A round must not straddle a window boundary, or the second window's
	// fresh quota looks like a race. With fresh identities only windows
	// aligned to the clock can roll mid-round, so a round that would start
	// too close to an epoch boundary waits until just after it.
	// The guard is twice the last round's length (a first guess before
	// that), so long windows do not make a short run wait for a boundary.
	margin := min(max(W/50, time.Millisecond), 100*time.Millisecond)
	guard := max(min(W/20, 250*time.Millisecond), 5*time.Millisecond)
	var lastRound time.Duration
	for r := range e.p.Rounds {
		if e.ctx.Err() != nil || !e.take(int64(n)*(L-1+int64(gws))) {
			return
		}
		// A segment runs its block of the rounds' identities; every
		// segment counts every round, so all stop where the whole plan
		// would.
		lo, hi := max(e.share.lo, r*n), min(e.share.hi, (r+1)*n)
		if lo >= hi {
			continue
		}
		at := e.elapsed()
		if lastRound > 0 {
			guard = max(2*lastRound, 5*time.Millisecond)
		}
		if next := e.epochAtOrAfter(at, W); next-at < guard {
			at = next + margin
		}
		if at >= e.p.Duration || !e.sleepUntil(at) {
			return
		}
		began := e.elapsed()
		endpoint := uint8(r % e.endpoints)
		first := uint32(lo)
		full, ok := e.prefill(first, hi-lo, L-1, endpoint)
		if !ok {
			return
		}
		valid, ok := e.release(first, hi-lo, gws, int32(r), endpoint, began, full)
		if !ok {
			return
		}
		if valid {
			e.rounds++
		}
		lastRound = e.elapsed() - began
	}
}

// prefill sends count requests for each of n identities from first, a few
// at a time, and waits for all of them: the race needs the quota held at
// L−1 before the release. full reports that every one of them was allowed;
// ok is false when the run ended first.
func (e *engine) prefill(first uint32, n int, count int64, endpoint uint8) (full, ok bool) {
	const lanes = 8
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for i := range n {
		id := first + uint32(i)
		per := (count + lanes - 1) / lanes
		for lane := int64(0); lane < lanes && lane*per < count; lane++ {
			from, to := lane*per, min((lane+1)*per, count)
			wg.Add(1)
			e.side.Add(1)
			go func() {
				defer e.side.Done()
				defer wg.Done()
				for seq := from; seq < to; seq++ {
					r, _ := e.do(job{
						intended: e.elapsed(), identity: id, round: history.NoRound,
						gateway: uint16(e.bal.Pick(id, uint64(seq))), endpoint: endpoint,
					})
					if r.Outcome == decision.Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
	}
	ok = e.wait(&wg)
	return admitted.Load() == int64(n)*count, ok
}

// release sends one request per identity through every gateway at the same
// instant: every goroutine is parked at a closed-channel barrier first. The
// round began (its prefill started) at offset began.
//
// If the round straddled an epoch-aligned window boundary, it is void: a
// clock-aligned limiter would have counted the prefill in one window and
// the release in a fresh one, and the fresh quota would pass for a race.
// Its released records are then recorded unmarked (NoRound) and valid is
// false. So is a round whose prefill was not all allowed (full false):
// with quota left beyond one, or none at all (errors, fail-closed, a lower
// limit than published), its release says nothing about a race. ok is
// false when the run ended before every answer came back.
func (e *engine) release(first uint32, n, gws int, round int32, endpoint uint8, began time.Duration, full bool) (valid, ok bool) {
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	var at time.Duration
	recs := make([]history.Record, n*gws)
	for i := range n {
		for g := range gws {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				ready.Done()
				<-gate
				recs[i*gws+g], _ = e.exec(job{intended: at, identity: first + uint32(i), round: round, gateway: uint16(g), endpoint: endpoint})
			}()
		}
	}
	ready.Wait()
	at = e.elapsed() // written before close(gate), which orders it before every read
	close(gate)
	if !e.wait(&done) {
		// The run is ending; record the answers when they come, unmarked:
		// the round is not counted in Meta.Rounds, nor was it checked for
		// straddling a boundary.
		e.side.Add(1)
		go func() {
			defer e.side.Done()
			done.Wait()
			for _, r := range recs {
				r.Round = history.NoRound
				e.results <- r
			}
		}()
		return false, false
	}
	var last time.Duration
	for _, r := range recs {
		last = max(last, r.Received)
	}
	W := int64(e.p.Limit.Window)
	origin := e.start.UnixNano()
	valid = full && (origin+int64(began))/W == (origin+int64(last))/W
	for _, r := range recs {
		if !valid {
			r.Round = history.NoRound
		}
		e.results <- r
	}
	return valid, true
}

// runBoundary fires the quota L per identity just before a window boundary
// and L just after it, each spread over a short span, for as many
// boundaries as the run has time for. Between two aimed boundaries one
// window is left idle, so the batch before a boundary meets a fresh window.
func (e *engine) runBoundary() {
	L, W := e.p.Limit.Count, e.p.Limit.Window
	n := len(e.names)
	span := max(W/20, time.Millisecond)
	e.span = span
	mode := e.p.Align
	// An epoch the scenario names is taken as said; one that auto falls
	// back on is a guess (see nextBoundary).
	epochErr := time.Duration(0)
	seq := make([]uint64, n)
	var notBefore time.Duration
	for e.ctx.Err() == nil {
		b, aim, ok := e.nextBoundary(&mode, &epochErr, notBefore, span, seq)
		if !ok || b+span > e.p.Duration || !e.take(2*L*int64(n)) {
			return
		}
		e.boundaries = append(e.boundaries, b)
		e.aims = append(e.aims, aim)
		var wg sync.WaitGroup
		var lastAllowed atomic.Int64
		for j := int64(0); j < 2*L; j++ {
			at := b - span + span*time.Duration(j)/time.Duration(L)
			if j >= L {
				at = b + span*time.Duration(j-L)/time.Duration(L)
			}
			if !e.sleepUntil(at) {
				return
			}
			for i := e.share.lo; i < e.share.hi; i++ {
				id := uint32(i)
				wg.Add(1)
				// Boundary records stay unmarked: Round means a race
				// round, and the boundaries themselves are in Meta.
				jb := job{
					intended: at, identity: id, round: history.NoRound,
					gateway: uint16(e.bal.Pick(id, seq[i])), endpoint: 0, wg: &wg,
				}
				if j >= L {
					jb.lastAllowed = &lastAllowed
				}
				e.dispatch(jb)
				seq[i]++
			}
		}
		if !e.wait(&wg) {
			return
		}
		// The windows the "after" batch opened (where windows open at a
		// first request) end W after its allowed requests were decided; a
		// batch that went out late must not make the next probe land in
		// them.
		notBefore = max(b+W+span, time.Duration(lastAllowed.Load())+W+2*time.Millisecond)
	}
}

// aimHeaders names a boundary found from the target's announced reset.
const aimHeaders = "headers"

// nextBoundary finds the next boundary to aim at, no earlier than
// notBefore (the end of the window the last batch opened), and how it was
// found (history.Aim): how far the target's own edge may lie from it.
// Auto may settle the mode on the way; epochErr is the uncertainty of an
// epoch-aligned boundary (0 as the scenario says it, what learning found,
// or -1 when auto learned nothing and fell back on epoch).
func (e *engine) nextBoundary(mode *string, epochErr *time.Duration, notBefore, span time.Duration, seq []uint64) (time.Duration, history.Aim, bool) {
	W := e.p.Limit.Window
	// Time to schedule the batch before the boundary.
	lead := span + 2*time.Millisecond
	switch *mode {
	case workload.AlignEpoch:
		return e.epochAtOrAfter(max(e.elapsed(), notBefore)+lead, W), history.Aim{How: workload.AlignEpoch, Uncertainty: *epochErr}, true
	case workload.AlignFirstRequest:
		if !e.sleepUntil(notBefore) {
			return 0, history.Aim{}, false
		}
		// Probe until one allowed request opens the windows; a denial means
		// the previous window has not ended yet.
		for try := 0; try < 20; try++ {
			recs, _, ok := e.probe(seq)
			if !ok {
				return 0, history.Aim{}, false
			}
			if b, err, ok := openedAt(recs, W); ok {
				return b + W, history.Aim{How: workload.AlignFirstRequest, Uncertainty: err}, true
			}
			if !e.sleepUntil(e.elapsed() + max(W/20, time.Millisecond)) {
				return 0, history.Aim{}, false
			}
		}
		return 0, history.Aim{}, false
	default: // workload.AlignAuto
		if !e.sleepUntil(notBefore) {
			return 0, history.Aim{}, false
		}
		recs, resps, ok := e.probe(seq)
		if !ok {
			return 0, history.Aim{}, false
		}
		if b, err, ok := fromHeaders(recs, resps, span); ok {
			for b-lead < e.elapsed() {
				b += W
			}
			return b, history.Aim{How: aimHeaders, Uncertainty: err}, true
		}
		l, ok := e.learnByDenial(seq, span, recs)
		if !ok {
			*mode, *epochErr = workload.AlignEpoch, -1
			return e.nextBoundary(mode, epochErr, notBefore, span, seq)
		}
		*mode = l.mode
		if l.mode == workload.AlignEpoch {
			// The learning spent the window before l.edge: aim at a later one.
			*epochErr = l.err
			b := l.edge + W
			for b-lead < e.elapsed() {
				b += W
			}
			return b, history.Aim{How: l.mode, Uncertainty: l.err}, true
		}
		if l.ready && l.edge-lead >= e.elapsed() {
			return l.edge, history.Aim{How: l.mode, Uncertainty: l.err}, true
		}
		// Windows that open at a first request have no later edge until a
		// request opens the next: the probes open them once they all end.
		resume := l.edge
		if l.ready {
			resume += l.err
		}
		return e.nextBoundary(mode, epochErr, max(notBefore, resume+2*time.Millisecond), span, seq)
	}
}

// halfTrip is how far the middle of r's round trip may lie from when the
// target decided it: nothing when the target said when.
func halfTrip(r history.Record) time.Duration {
	if r.Decided != history.NoTime {
		return 0
	}
	return (r.Received - r.Sent + 1) / 2
}

// probe sends one request per identity of the process, at once.
func (e *engine) probe(seq []uint64) ([]history.Record, []Response, bool) {
	return e.probeIDs(seq, e.share.lo, e.share.hi)
}

// probeIDs sends one request to each identity in [lo, hi), at once.
func (e *engine) probeIDs(seq []uint64, lo, hi int) ([]history.Record, []Response, bool) {
	n := hi - lo
	if e.ctx.Err() != nil || !e.take(int64(n)) {
		return nil, nil, false
	}
	jobs := make([]job, n)
	at := e.elapsed()
	for i := range n {
		id := uint32(lo + i)
		jobs[i] = job{intended: at, identity: id, round: history.NoRound, gateway: uint16(e.bal.Pick(id, seq[id]))}
		seq[id]++
	}
	return e.doAll(jobs)
}

// doAll makes the requests at once, each on its own goroutine, and waits
// for their answers; false when the run ended first (the answers still get
// recorded when they come).
func (e *engine) doAll(jobs []job) ([]history.Record, []Response, bool) {
	recs, resps := make([]history.Record, len(jobs)), make([]Response, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		e.side.Add(1)
		go func() {
			defer e.side.Done()
			defer wg.Done()
			recs[i], resps[i] = e.do(j)
		}()
	}
	if !e.wait(&wg) {
		return nil, nil, false
	}
	return recs, resps, true
}

// wait waits for wg, but not past the run's duration or its cancellation:
// a target that stops answering must not hold a pattern forever.
func (e *engine) wait(wg *sync.WaitGroup) bool { return e.waitUntil(wg, e.p.Duration) }

// waitUntil waits for wg, but not past offset at of the run's clock or the
// run's cancellation; false when it stopped waiting before wg was done.
func (e *engine) waitUntil(wg *sync.WaitGroup, at time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	e.timer.Reset(max(at-e.elapsed(), 0))
	defer e.timer.Stop()
	select {
	case <-done:
		return true
	case <-e.timer.C:
		return false
	case <-e.ctx.Done():
		return false
	}
}

// openedAt is when the allowed probes opened their windows (the median),
// and how far the window of any identity probed may open from it: each
// allowed probe's distance from the median plus its half round trip, so
// identities decided apart (one probe held up under load) widen it. A
// probe not allowed left its identity's window open, its edge unknown:
// then the edges are known only to within a window.
func openedAt(recs []history.Record, window time.Duration) (time.Duration, time.Duration, bool) {
	var ts, errs []time.Duration
	unknown := false
	for _, r := range recs {
		if r.Outcome == decision.Allowed {
			ts = append(ts, decidedAt(r))
			errs = append(errs, halfTrip(r))
		} else {
			unknown = true
		}
	}
	b, err, ok := spread(ts, errs)
	if unknown {
		err = max(err, window)
	}
	return b, err, ok
}

// spread is the median of the estimates ts, each known to within errs,
// and how far the truth behind any of them may lie from that median.
func spread(ts, errs []time.Duration) (time.Duration, time.Duration, bool) {
	b, ok := median(slices.Clone(ts))
	var err time.Duration
	for i, t := range ts {
		d := t - b
		if d < 0 {
			d = -d
		}
		err = max(err, d+errs[i])
	}
	return b, err, ok
}

// fromHeaders is the boundary the probes' answers announce: when the window
// resets (RateLimit-Reset and the like), or for a denial, when to retry;
// and how far off any answer's edge may lie from it (see spread; each
// hint's precision and round trip).
// Hints coarser than span are passed over: a reset stated in whole
// seconds cannot aim shots ±span wide at a window edge.
func fromHeaders(recs []history.Record, resps []Response, span time.Duration) (time.Duration, time.Duration, bool) {
	var ts, errs []time.Duration
	for i, resp := range resps {
		if resp.HintPrecision > span {
			continue
		}
		var at time.Duration
		switch {
		case resp.Reset > 0:
			at = decidedAt(recs[i]) + resp.Reset
		case resp.Outcome == decision.Denied && resp.RetryAfter > 0:
			at = decidedAt(recs[i]) + resp.RetryAfter
		default:
			continue
		}
		ts = append(ts, at)
		errs = append(errs, resp.HintPrecision+halfTrip(recs[i]))
	}
	return spread(ts, errs)
}

func median(ts []time.Duration) (time.Duration, bool) {
	if len(ts) == 0 {
		return 0, false
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts[len(ts)/2], true
}

// learned is what learnByDenial found out about the target's windows.
type learned struct {
	mode string
	// edge is, for epoch-aligned windows, one of their edges. Where
	// windows open at a first request it is the edge of windows every
	// identity opened together (ready), or else when every window the
	// learning filled has surely ended, so that probes may open them
	// together.
	edge, err time.Duration
	ready     bool
}

// learnByDenial spends the process's first identity's quota until a
// denial, then finds when requests are allowed again: that is an edge,
// known to within err. Whether it sits on an epoch multiple of W says
// which alignment the target uses, unless the window the identity's
// probe opened would have ended there too, or the probe met a window
// already open: then settle tells them apart.
// A denial's Retry-After finer than span says the edge at once; a
// coarser one is passed over for the answers themselves.
func (e *engine) learnByDenial(seq []uint64, span time.Duration, probes []history.Record) (learned, bool) {
	W := e.p.Limit.Window
	id := uint32(e.share.lo) // the process's first identity
	_, denied, resp, spent, ok := e.spendUntilDenied(seq, id)
	if !ok {
		return learned{}, false
	}
	// A window the identity's probe opened admits L before the denial;
	// fewer means one opened before the run (a run just before it), whose
	// edge says nothing of alignment.
	var probe history.Record
	fresh := false
	for _, p := range probes {
		if p.Identity == id && p.Outcome == decision.Allowed {
			probe, fresh = p, spent+1 == e.p.Limit.Count
		}
	}
	var b, err, lo, hi time.Duration
	epoch, hinted := false, resp.RetryAfter > 0 && resp.HintPrecision <= span
	var opened history.Record // the request that opened a window, when a step found one
	if hinted {
		b, err = decidedAt(denied)+resp.RetryAfter, resp.HintPrecision+halfTrip(denied)
		lo, hi = b-err, b+err
		epoch = e.alignOf(b) == workload.AlignEpoch
	} else {
		var last history.Record
		if last, opened, ok = e.stepUntilAllowed(seq, id, denied); !ok {
			return learned{}, false
		}
		// The window rolled between the last denial and this answer. If an
		// epoch multiple of W lies in that interval (and the interval is
		// short enough to mean something), the windows look epoch-aligned
		// and the edge is exactly that multiple; otherwise this request
		// opened its window.
		lo, hi = last.Sent, opened.Received
		b, err = decidedAt(opened), halfTrip(opened)
		if hi-lo <= W/4 {
			if eb := e.epochAtOrAfter(lo, W); eb <= hi {
				epoch, b, err = true, eb, hi-lo
			}
		}
	}
	if epoch {
		if flo, fhi := freshEdge(probe, W); !fresh || flo <= hi && lo <= fhi {
			return e.settle(seq, b, err)
		}
		return learned{mode: workload.AlignEpoch, edge: b, err: err}, true
	}
	if hinted {
		// The first identity's window is full until b; every other
		// identity's, opened by its probe, ends within a window of it.
		return learned{mode: workload.AlignFirstRequest, edge: max(b+err, windowsEnd(probes, W))}, true
	}
	return e.openOthers(seq, probes, opened, span)
}

// once sends one request to identity id now and waits for its answer.
func (e *engine) once(seq []uint64, id uint32) (history.Record, Response, bool) {
	if e.ctx.Err() != nil || !e.take(1) {
		return history.Record{}, Response{}, false
	}
	recs, resps, ok := e.doAll([]job{{
		intended: e.elapsed(), identity: id, round: history.NoRound,
		gateway: uint16(e.bal.Pick(id, seq[id])),
	}})
	seq[id]++
	if !ok {
		return history.Record{}, Response{}, false
	}
	return recs[0], resps[0], true
}

// spendUntilDenied sends identity id up to L+1 requests one after
// another until one is denied: the first request's record, the denied
// one's and its answer, and how many were allowed before it; false when
// none was denied.
func (e *engine) spendUntilDenied(seq []uint64, id uint32) (first, denied history.Record, resp Response, allowed int64, ok bool) {
	for i := range e.p.Limit.Count + 1 {
		r, resp, ok := e.once(seq, id)
		if !ok {
			return first, denied, resp, allowed, false
		}
		if i == 0 {
			first = r
		}
		switch r.Outcome {
		case decision.Denied:
			return first, r, resp, allowed, true
		case decision.Allowed:
			allowed++
		}
	}
	return first, denied, resp, allowed, false
}

// stepUntilAllowed sends identity id a request every W/50 after denied
// until one is allowed, for a little more than a window: the last one
// denied and the one allowed.
func (e *engine) stepUntilAllowed(seq []uint64, id uint32, denied history.Record) (last, allowed history.Record, ok bool) {
	W := e.p.Limit.Window
	step := max(W/50, 2*time.Millisecond)
	until := denied.Received + W + W/10
	last = denied
	for at := e.elapsed() + step; at <= until; at += step {
		if !e.sleepUntil(at) {
			return last, allowed, false
		}
		r, _, ok := e.once(seq, id)
		if !ok {
			return last, allowed, false
		}
		if r.Outcome == decision.Allowed {
			return last, r, true
		}
		last = r
	}
	return last, allowed, false
}

// settle tells epoch-aligned windows from windows that open at a first
// request, where both put the edge at b: the window the first identity's
// probe opened would have ended there too. Half a window past the next
// epoch edge, when every window has ended either way, the identity opens
// a window and fills it; a quarter of a window past the epoch edge after
// that, a request is allowed only if windows are epoch-aligned (a window
// opened at a first request is still full).
func (e *engine) settle(seq []uint64, b, err time.Duration) (learned, bool) {
	W := e.p.Limit.Window
	id := uint32(e.share.lo)
	if !e.sleepUntil(b + err + W + W/2) {
		return learned{}, false
	}
	first, denied, _, _, ok := e.spendUntilDenied(seq, id)
	// The filling must end inside the epoch window it began in.
	if !ok || first.Outcome != decision.Allowed || denied.Received >= b+2*W {
		return learned{}, false
	}
	if !e.sleepUntil(b + 2*W + W/4) {
		return learned{}, false
	}
	r, _, ok := e.once(seq, id)
	ends, ended := freshEdge(first, W)
	if !ok || r.Received >= ends {
		return learned{}, false // too late to tell: the first-request window may have ended
	}
	switch r.Outcome {
	case decision.Allowed:
		return learned{mode: workload.AlignEpoch, edge: b + 2*W, err: err}, true
	case decision.Denied:
		return learned{mode: workload.AlignFirstRequest, edge: ended}, true
	}
	return learned{}, false
}

// openOthers opens the other identities' windows beside the one opened
// for the first identity (where windows open at a first request): theirs,
// opened by their probes, have ended by now or soon, and none opens again
// until a request comes. The edge of them all is a window after they
// opened, as uncertain as the openings spread (see openedAt). Openings
// spread wider than the shots' span (answers held up on a busy machine)
// are no edge to aim at: then every window is left to end, for the next
// probes to open them together.
func (e *engine) openOthers(seq []uint64, probes []history.Record, opened history.Record, span time.Duration) (learned, bool) {
	W := e.p.Limit.Window
	recs := []history.Record{opened}
	if e.share.hi-e.share.lo > 1 {
		if !e.sleepUntil(max(e.elapsed(), windowsEnd(probes, W))) {
			return learned{}, false
		}
		others, _, ok := e.probeIDs(seq, e.share.lo+1, e.share.hi)
		if !ok {
			return learned{}, false
		}
		recs = append(recs, others...)
	}
	at, err, _ := openedAt(recs, W)
	if err > span {
		return learned{mode: workload.AlignFirstRequest, edge: windowsEnd(recs, W)}, true
	}
	return learned{mode: workload.AlignFirstRequest, edge: at + W, err: err, ready: true}, true
}

// freshEdge is where the window r opened would end, were windows opened
// at a first request and r the first: W after the target decided it.
func freshEdge(r history.Record, window time.Duration) (lo, hi time.Duration) {
	if r.Decided != history.NoTime {
		return r.Decided + window, r.Decided + window
	}
	return r.Sent + window, r.Received + window
}

// windowsEnd is when every window the probes were decided in has ended,
// where windows open at a first request: no later than W after the last
// answer.
func windowsEnd(probes []history.Record, window time.Duration) time.Duration {
	var end time.Duration
	for _, p := range probes {
		_, hi := freshEdge(p, window)
		end = max(end, hi)
	}
	return end
}

// alignOf says whether a boundary observed at b looks epoch-aligned.
func (e *engine) alignOf(b time.Duration) string {
	W := e.p.Limit.Window
	if e.nearEpoch(b, W, max(W/25, 5*time.Millisecond)) {
		return workload.AlignEpoch
	}
	return workload.AlignFirstRequest
}
