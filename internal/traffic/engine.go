package traffic

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/workload"
)

// job is one request handed to a worker: a fixed-size value, so handing it
// over allocates nothing.
type job struct {
	intended time.Duration
	identity uint32
	round    int32
	gateway  uint16
	endpoint uint8
	// wg, when set, is told when the request is done (or dropped): the
	// boundary and race patterns wait for their batches.
	wg *sync.WaitGroup
	// lastAllowed, when set, keeps the latest Received offset of the
	// batch's allowed requests: the boundary pattern needs to know when the
	// windows its batch opened will have ended.
	lastAllowed *atomic.Int64
}

// engine is one run's state. Workers run requests (in the paced patterns
// they take the schedule's hits themselves; in the others one producer
// goroutine hands them out); one consumer appends to the history, so
// recording takes no shared lock.
type engine struct {
	t         Target
	p         Plan
	onError   func(error)
	bal       workload.Balancer
	names     []string
	endpoints int
	shares    []float64 // cumulative endpoint shares, nil = even

	start  time.Time // monotonic origin of every offset
	wall   time.Time // RunOptions.Now at start: what offsets are on
	share  share     // what of the plan this process runs (Plan.Segment)
	ctx    context.Context
	reqCtx context.Context
	timer  *time.Timer
	wk     *waker // the producer's (see sleepUntil)
	// drops tallies the producer's dropped requests (see history.Drops):
	// under overload a drop costs a few increments, not a record, a
	// hand-off and its share of every pass of the analysis. unshown are
	// those not yet in the progress counters, added when the producer
	// sleeps or ends.
	drops   history.Drops
	unshown uint64
	// The paced patterns' schedule, as its workers take it, and each
	// worker's tally of the hits it dropped (see runPaced).
	pc        Pacer
	sched     schedule
	loopDrops []history.Drops
	budget    int64 // requests the producer may still schedule
	results   chan history.Record
	// batches carry the busy loops' records in groups (recBatch): one
	// channel hand-off and collector wake-up per group instead of per
	// request.
	batches chan []history.Record
	spare   chan []history.Record // emptied batches, for reuse
	jobs    chan job
	free    atomic.Int64 // idle workers
	workers sync.WaitGroup
	side    sync.WaitGroup // pattern goroutines outside the pool (race, probes)

	sent, allowed, denied, errors, dropped atomic.Uint64
	// forms gathers the rate-limit header families the answers carried.
	forms atomic.Uint32
	// statuses counts an http target's answers by status (index 0: a
	// status outside 100..599).
	statuses [600]atomic.Int64
	// retry is the closed-model clients' policy (runClients).
	retry workload.RetryPolicy

	// Filled by the patterns, read after the producer is done.
	boundaries []time.Duration
	aims       []history.Aim
	span       time.Duration
	rounds     int
}

// Run sends the plan's traffic to t and returns every request as a history.
// It stops by itself at Plan.Duration or Plan.MaxRequests, whichever comes
// first. When ctx is cancelled it stops pacing, lets in-flight requests
// finish for RunOptions.Grace, and returns the partial history with an
// error wrapping ctx.Err(), so the caller can mark its report incomplete.
//
// Each stage of a run's life is its own function below, in the order Run
// calls them: set-up, the collector, the start, the fault hooks and
// progress, the producer, the drain and the history's finishing.
func Run(ctx context.Context, t Target, p Plan, o RunOptions) (*history.History, error) {
	gateways, endpoints := t.Gateways(), t.Endpoints()
	e, err := newEngine(ctx, t, p, o, len(gateways), len(endpoints))
	if err != nil {
		return nil, err
	}
	h, err := e.newHistory(o.Meta, o.KeepInMemory, o.SpillDir, gateways, endpoints)
	if err != nil {
		return nil, err
	}

	// In-flight requests must outlive a cancelled ctx for the grace period,
	// so they get their own context, cancelled only after the grace.
	reqCtx, cancelReq := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReq()
	e.reqCtx = reqCtx

	consumed := make(chan struct{})
	go e.collect(h, consumed)

	if err := e.begin(h, o.StartAt, o.Now); err != nil {
		// Nothing was sent: stop the collector and release the history.
		close(e.results)
		close(e.batches)
		<-consumed
		_ = h.Close()
		return nil, err
	}
	hooks := e.startHooks(o.Hooks)
	stopProgress := e.startProgress(o.Progress, o.ProgressEvery)
	e.produce(h)
	e.holdForHooks(o.Hooks)
	e.drain(o.Grace, cancelReq, consumed)
	hooks.stop(e.elapsed())
	stopProgress()
	e.finish(h, o.Hooks, hooks.applied)
	if err := ctx.Err(); err != nil {
		return h, fmt.Errorf("traffic run stopped after %s of %s: %w",
			time.Since(e.start).Round(time.Millisecond), e.p.Duration, err)
	}
	return h, nil
}

// newEngine checks the plan against the target's gateways and endpoints and
// sets up what the run's stages share: the balancer, the identities' names
// and what of the plan this process runs.
func newEngine(ctx context.Context, t Target, p Plan, o RunOptions, gateways, endpoints int) (*engine, error) {
	p, err := p.normalize(o.Meta, gateways, endpoints)
	if err != nil {
		return nil, err
	}
	bal := o.Balancer
	if bal == nil {
		if bal, err = workload.NewBalancer(p.Spread, gateways, p.Seed); err != nil {
			return nil, fmt.Errorf("traffic: %w", err)
		}
	}
	e := &engine{
		t: t, p: p, bal: bal, endpoints: endpoints, onError: o.OnError,
		ctx: ctx, budget: p.MaxRequests,
		results: make(chan history.Record, 4096),
		batches: make(chan []history.Record, 256),
		spare:   make(chan []history.Record, 256),
		timer:   time.NewTimer(time.Hour),
	}
	e.timer.Stop()
	if p.EndpointShares != nil {
		e.shares = cumulative(p.EndpointShares)
	}
	if p.Pattern == workload.PatternRace {
		e.names = raceNames(p.Rounds, p.Identities)
	} else {
		e.names = p.identityNames()
	}
	names := len(e.names)
	if p.Model == workload.ModelClosed {
		names = p.Identities
	}
	if e.share, err = shareOf(p, names); err != nil {
		return nil, err
	}
	return e, nil
}

// newHistory makes the run's history with what is known before the first
// request in its Meta, spilling to dir when the run may record more than
// keep (0: history.InMemory) requests.
func (e *engine) newHistory(meta history.Meta, keep int, dir string, gateways, endpoints []string) (*history.History, error) {
	p := e.p
	meta.Limit = p.Limit
	meta.Identities = append([]string(nil), e.names...)
	meta.Gateways = append([]string(nil), gateways...)
	meta.Endpoints = append([]string(nil), endpoints...)
	if p.Model == workload.ModelOpen {
		meta.Workers = p.Workers
	}
	if !e.share.whole {
		meta.Segment = p.Segment.String()
	}
	keep = cmp.Or(keep, history.InMemory)
	h := history.New(meta, min(e.capacity(), keep))
	if p.MaxRequests > int64(keep) {
		// Spilling happens on the consumer's side of the results channel
		// and in the history's own writer goroutine: the workers never
		// wait for the disk.
		if err := h.Spill(history.SpillOptions{Dir: dir, Keep: keep}); err != nil {
			return nil, fmt.Errorf("traffic: %w", err)
		}
	}
	return h, nil
}

// collect is the one consumer of the run's records: it appends each to h
// and adds them to the progress counters, until the results and batches
// channels are both closed; then it closes consumed.
func (e *engine) collect(h *history.History, consumed chan<- struct{}) {
	defer close(consumed)
	// The counters progress reads are shared: a batch is tallied first
	// and added once.
	var tl [decision.Dropped + 1]uint64
	tally := func() {
		for o, c := range tl {
			if c == 0 {
				continue
			}
			switch decision.Outcome(o) {
			case decision.Allowed:
				e.allowed.Add(c)
			case decision.Denied:
				e.denied.Add(c)
			case decision.Dropped:
				e.dropped.Add(c)
			default:
				e.errors.Add(c)
			}
			tl[o] = 0
		}
	}
	add := func(r history.Record) {
		h.Append(r)
		tl[min(r.Outcome, decision.Dropped)]++
	}
	results, batches := e.results, e.batches
	for results != nil || batches != nil {
		select {
		case r, ok := <-results:
			if !ok {
				results = nil
				continue
			}
			add(r)
			tally()
		case b, ok := <-batches:
			if !ok {
				batches = nil
				continue
			}
			for _, r := range b {
				add(r)
			}
			tally()
			select {
			case e.spare <- b[:0]:
			default:
			}
		}
	}
}

// begin warms the target's connections, waits for the common start when
// there is one (at, on the clock now, time.Now when nil) and starts the
// run's clock, recording in h when it started and how late.
func (e *engine) begin(h *history.History, at time.Time, now func() time.Time) error {
	if now == nil {
		now = time.Now
	}
	e.warm()
	if !at.IsZero() {
		late, err := waitFor(e.ctx, at, now, e.p.Duration)
		if err != nil {
			return err
		}
		h.Meta.Late = late
	}
	e.start = time.Now()
	e.wall = now()
	h.Meta.Start = e.wall
	return nil
}

// holdForHooks keeps a run whose schedule ended early (a burst per long
// window) going until its planned duration when a fault is due within it,
// so a planned fault happens and what follows it is watched, as in a run
// whose traffic lasts.
func (e *engine) holdForHooks(hooks []Hook) {
	due := false
	for _, hk := range hooks {
		due = due || (hk.Fn != nil && hk.At < e.p.Duration)
	}
	if left := e.p.Duration - e.elapsed(); due && left > 0 {
		t := time.NewTimer(left)
		defer t.Stop()
		select {
		case <-t.C:
		case <-e.ctx.Done():
		}
	}
}

// hookRunner owns the fault hooks' goroutines, one per hook due within the
// run, each waiting for its offset on the run's clock.
type hookRunner struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	endedAt atomic.Int64 // offset at which the run's traffic ended
	// applied[k] is when hook k's fault was actually applied, and for how
	// long: set by the hook's goroutine, read once every hook is done.
	applied []history.Fault
}

// startHooks starts a goroutine for each hook due before the run's end.
func (e *engine) startHooks(hooks []Hook) *hookRunner {
	hookCtx, cancel := context.WithCancel(e.ctx)
	hr := &hookRunner{cancel: cancel, applied: make([]history.Fault, len(hooks))}
	for k, hk := range hooks {
		if hk.Fn == nil || hk.At >= e.p.Duration {
			continue
		}
		hr.wg.Add(1)
		go func() {
			defer hr.wg.Done()
			tm := time.NewTimer(hk.At - time.Since(e.start))
			defer tm.Stop()
			run := func() {
				at := e.elapsed()
				mark := func() { at = e.elapsed() }
				hk.Fn(context.WithValue(hookCtx, appliedKey{}, mark))
				hr.applied[k] = history.Fault{At: max(at, time.Nanosecond), For: e.elapsed() - at}
			}
			select {
			case <-tm.C:
				run()
			case <-hookCtx.Done():
				// A starved goroutine may see both ready at once; a hook
				// that was due before the run ended still runs (with the
				// cancelled context, so it can do the least).
				if e.ctx.Err() == nil && hk.At <= time.Duration(hr.endedAt.Load()) {
					run()
				}
			}
		}()
	}
	return hr
}

// stop tells the hooks the run's traffic ended at offset ended and waits
// for them: those not yet due never run.
func (hr *hookRunner) stop(ended time.Duration) {
	hr.endedAt.Store(int64(ended))
	hr.cancel()
	hr.wg.Wait()
}

// startProgress starts the goroutine that calls progress with the run's
// counters every every (100 ms when <= 0); the function it returns stops
// it and makes the last call, with Done set. Without progress it does
// nothing.
func (e *engine) startProgress(progress func(Stats), every time.Duration) (stop func()) {
	if progress == nil {
		return func() {}
	}
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				progress(e.stats(false))
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		progress(e.stats(true))
	}
}

// produce runs the plan's model and pattern on the calling goroutine until
// the schedule is over (or ctx is cancelled); in the open model it starts
// the worker pool and closes its jobs when done.
func (e *engine) produce(h *history.History) {
	p := e.p
	m := govern.join()
	defer govern.leave(m)
	switch {
	case p.Model == workload.ModelClosed && (p.Retry != nil || p.Think > 0):
		e.retry = workload.RetryPolicy{MaxAttempts: 1} // think time alone: no retries
		if p.Retry != nil {
			e.retry = *p.Retry
			h.Meta.Retry = e.retry.String()
		}
		e.runClients()
	case p.Model == workload.ModelClosed:
		e.runClosed()
	default:
		switch p.Pattern {
		case workload.PatternConstant:
			e.pc = ConstantPacer{Rate: p.Rate, Duration: p.Duration}
		case workload.PatternRamp:
			e.pc = RampPacer{From: p.RampFrom, To: p.Rate, Duration: p.Duration}
		case workload.PatternBurst:
			e.pc = BurstPacer{Size: uint64(p.BurstSize * p.Identities), Every: p.Limit.Window, Duration: p.Duration}
		}
		if e.pc != nil {
			stop := govern.watch(m)
			defer stop()
			e.runPaced()
			return
		}
		e.startWorkers(p.Workers)
		e.wk = newWaker(e, minWake, e.showDrops)
		switch p.Pattern {
		case workload.PatternBoundary:
			e.runBoundary()
		case workload.PatternRace:
			e.runRace()
		}
		e.wk.close()
		e.showDrops()
		close(e.jobs)
	}
}

// drain is the shutdown: in-flight requests get the grace period
// (DefaultGrace when <= 0), then are cancelled with cancelReq (and come
// back as errors, still recorded); then it closes the collector's channels
// and waits until it has consumed everything.
func (e *engine) drain(grace time.Duration, cancelReq context.CancelFunc, consumed <-chan struct{}) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	drained := make(chan struct{})
	go func() {
		e.workers.Wait()
		e.side.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(grace):
		cancelReq()
		<-drained
	}
	close(e.results)
	close(e.batches)
	<-consumed
}

// finish writes into h's Meta what the run learned: the drops tallied
// without a record, when each hook's fault was applied (applied, see
// recordApplied), what the patterns aimed at and what the answers carried.
func (e *engine) finish(h *history.History, hooks []Hook, applied []history.Fault) {
	for k := range e.loopDrops {
		e.drops.Merge(&e.loopDrops[k])
	}
	h.Meta.Drops = e.drops
	recordApplied(h.Meta.Faults, hooks, applied)
	h.Meta.Boundaries, h.Meta.Aims = e.boundaries, e.aims
	h.Meta.BoundarySpan = e.span
	h.Meta.Rounds = e.rounds
	h.Meta.HeaderForms = Form(e.forms.Load()).Names()
	h.Meta.Statuses = e.statusCounts()
	h.Meta.WallMoved = history.WallMoved(e.start, time.Now())
}

// appliedKey carries, in a hook's context, the function Applied calls.
type appliedKey struct{}

// Applied tells the run, from inside a hook, that its fault takes effect
// now: a hook that prepares before acting (reading counters first) marks
// the instant it acts, which becomes the fault's At. Outside a hook it does
// nothing.
func Applied(ctx context.Context) {
	if mark, ok := ctx.Value(appliedKey{}).(func()); ok {
		mark()
	}
}

// recordApplied moves each fault a hook applied to when the hook actually
// ran (applied, zero for one that never ran), and a held fault's end to
// when the hook let it go. A fault's Meta entry is the hook's when their
// action and planned offset agree.
func recordApplied(faults []history.Fault, hooks []Hook, applied []history.Fault) {
	for k, hk := range hooks {
		a := applied[k]
		if a.At == 0 {
			continue
		}
		i := slices.IndexFunc(faults, func(f history.Fault) bool { return f.Action == hk.Name && f.At == hk.At })
		if i < 0 {
			continue
		}
		faults[i].At = a.At
		if hk.Holds {
			faults[i].For = a.For
		}
	}
}

func (e *engine) stats(done bool) Stats {
	s := Stats{
		Sent: e.sent.Load(), Allowed: e.allowed.Load(), Denied: e.denied.Load(),
		Errors: e.errors.Load(), Dropped: e.dropped.Load(),
		Elapsed: time.Since(e.start), Planned: e.p.Duration, Done: done,
	}
	if secs := s.Elapsed.Seconds(); secs > 0 {
		s.Rate = float64(s.Allowed+s.Denied+s.Errors) / secs
	}
	return s
}

// Warming opens each gateway's share of the requests that can be in
// flight, at most maxWarm connections, within warmTimeout: a Redis or
// gateway that cannot be reached shows in the run's own records instead.
const (
	maxWarm     = 64
	warmTimeout = 2 * time.Second
)

// warm opens the target's connections before the run's clock starts, when
// the target can (see Warmer). Errors are the run's to record.
func (e *engine) warm() {
	w, ok := e.t.(Warmer)
	n := len(e.t.Gateways())
	if !ok || n == 0 {
		return
	}
	inFlight := e.p.Workers
	if e.p.Model == workload.ModelClosed {
		inFlight = e.p.Concurrency
	}
	ctx, cancel := context.WithTimeout(e.ctx, warmTimeout)
	defer cancel()
	_ = w.Warm(ctx, min(maxWarm, (inFlight+n-1)/n))
}

// capacity estimates how many records the run will hold, so the history is
// allocated once; it never exceeds MaxRequests.
func (e *engine) capacity() int {
	p := e.p
	secs := p.Duration.Seconds()
	var n float64
	switch {
	case p.Model == workload.ModelClosed:
		// Unknowable: the target's speed decides. Start modest and let the
		// history grow rather than reserve MaxRequests up front.
		n = 1 << 16
	case p.Pattern == workload.PatternConstant:
		n = p.Rate.PerSecond() * secs
	case p.Pattern == workload.PatternRamp:
		n = (p.Rate.PerSecond() + p.RampFrom.PerSecond()) / 2 * secs
	case p.Pattern == workload.PatternBurst:
		n = float64(p.BurstSize*p.Identities) * (math.Floor(secs/p.Limit.Window.Seconds()) + 1)
	case p.Pattern == workload.PatternBoundary:
		n = float64(2*p.Limit.Count*int64(p.Identities)) * (secs/(2*p.Limit.Window.Seconds()) + 1)
	case p.Pattern == workload.PatternRace:
		n = float64(int64(p.Rounds*p.Identities) * (p.Limit.Count - 1 + int64(len(e.t.Gateways()))))
	}
	if p.Model != workload.ModelClosed {
		n *= e.share.fraction(p.Segment, len(e.names))
	}
	n = math.Min(n+64, float64(p.MaxRequests))
	return int(math.Min(n, 1<<24))
}

func (e *engine) startWorkers(n int) {
	e.jobs = make(chan job, n)
	e.free.Store(int64(n))
	e.workers.Add(n)
	for range n {
		go func() {
			defer e.workers.Done()
			rb := recBatch{e: e}
			defer rb.flush()
			held := time.NewTimer(holdIdle)
			held.Stop()
			for {
				var j job
				var ok bool
				select {
				case j, ok = <-e.jobs:
				default:
					if len(rb.b) == 0 {
						j, ok = <-e.jobs
						break
					}
					// Idle with records held: the next job usually comes
					// within holdIdle; only then hand them over, so
					// progress stays current.
					held.Reset(holdIdle)
					select {
					case j, ok = <-e.jobs:
						held.Stop()
					case <-held.C:
						rb.flush()
						j, ok = <-e.jobs
					}
				}
				if !ok {
					return
				}
				r, _ := e.exec(j)
				if j.lastAllowed != nil && r.Outcome == decision.Allowed {
					storeMax(j.lastAllowed, int64(r.Received))
				}
				rb.add(r)
				e.free.Add(1)
				if j.wg != nil {
					j.wg.Done()
				}
			}
		}()
	}
}

// storeMax raises a to v unless it is already higher.
func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// elapsed is the run's clock.
func (e *engine) elapsed() time.Duration { return time.Since(e.start) }

// take reserves n requests of the budget; false when it is spent.
func (e *engine) take(n int64) bool {
	if e.budget < n {
		return false
	}
	e.budget -= n
	return true
}

// sleepUntil waits on the producer's waker (see waker.until).
func (e *engine) sleepUntil(at time.Duration) bool { return e.wk.until(at) }

// claim takes a free worker, false when none is: a saturated pool is seen
// with a load, not two atomic writes.
func (e *engine) claim() bool {
	if e.free.Load() <= 0 {
		return false
	}
	if e.free.Add(-1) < 0 {
		e.free.Add(1)
		return false
	}
	return true
}

// dispatch hands j to a free worker, or records it as dropped when every
// worker is busy: the open model never delays a request to wait for one.
func (e *engine) dispatch(j job) {
	if !e.claim() {
		e.drops.Add(j.intended, j.identity, j.gateway, j.endpoint)
		e.unshown++
		if j.wg != nil {
			j.wg.Done()
		}
		return
	}
	e.jobs <- j
}

// showDrops adds the drops not yet counted to the progress counters.
func (e *engine) showDrops() {
	if e.unshown > 0 {
		e.dropped.Add(e.unshown)
		e.unshown = 0
	}
}

// statusCounts are the statuses answered, nil when none was counted (not
// an http target).
func (e *engine) statusCounts() map[int]int64 {
	var out map[int]int64
	for s := range e.statuses {
		if n := e.statuses[s].Load(); n > 0 {
			if out == nil {
				out = map[int]int64{}
			}
			out[s] = n
		}
	}
	return out
}

// exec makes one request now and returns its record (and the raw response,
// which the boundary pattern learns from).
func (e *engine) exec(j job) (history.Record, Response) {
	e.sent.Add(1)
	sent := e.elapsed()
	resp := e.t.Do(e.reqCtx, Request{
		Identity: j.identity, ID: e.names[j.identity],
		Gateway: int(j.gateway), Endpoint: int(j.endpoint),
	})
	r := history.Record{
		Intended: j.intended, Sent: sent, Received: e.elapsed(),
		Decided: history.NoTime, RetryAfter: history.NoTime,
		Identity: j.identity, Round: j.round, Gateway: j.gateway, Endpoint: j.endpoint,
		Outcome: resp.Outcome, By: resp.By,
	}
	if !resp.Decided.IsZero() {
		r.Decided = resp.Decided.Sub(e.wall)
	}
	if f := uint32(resp.Form); f != 0 && e.forms.Load()&f != f {
		e.forms.Or(f)
	}
	if s := resp.Status; s != 0 {
		if s < 100 || s >= len(e.statuses) {
			s = 0
		}
		e.statuses[s].Add(1)
	}
	if resp.RetryAfter >= 0 && resp.Outcome == decision.Denied {
		r.RetryAfter = resp.RetryAfter
	}
	if resp.Err != nil || (resp.Outcome != decision.Allowed && resp.Outcome != decision.Denied) {
		r.Outcome = decision.Error
		if resp.Err != nil && e.onError != nil {
			e.onError(resp.Err)
		}
	} else if resp.Cause != nil && e.onError != nil {
		// A policy answered for Redis: why is what the run's errors say.
		e.onError(resp.Cause)
	}
	return r, resp
}

// do makes one request on the calling goroutine (outside the pool, for
// probes and race releases) and records it.
func (e *engine) do(j job) (history.Record, Response) {
	r, resp := e.exec(j)
	e.results <- r
	return r, resp
}

// endpointFor spreads hits over endpoints by their shares, deterministically.
func (e *engine) endpointFor(hit uint64) uint8 {
	if e.endpoints == 1 {
		return 0
	}
	if e.shares == nil {
		return uint8(hit % uint64(e.endpoints))
	}
	u := float64(workload.Mix(hit^0x5851f42d4c957f2d)>>11) / (1 << 53)
	i := sort.SearchFloat64s(e.shares, u)
	return uint8(min(i, e.endpoints-1))
}

func cumulative(shares []float64) []float64 {
	sum := 0.0
	for _, s := range shares {
		sum += s
	}
	out := make([]float64, len(shares))
	acc := 0.0
	for i, s := range shares {
		acc += s
		out[i] = acc / sum
	}
	return out
}

// hitJob is the job for hit number hit of an identity-interleaved pattern:
// identities take turns, each identity's own requests spread by the balancer.
func (e *engine) hitJob(hit uint64, at time.Duration) job {
	n := uint64(len(e.names))
	id := uint32(hit % n)
	return job{
		intended: at, identity: id, round: history.NoRound,
		gateway: uint16(e.bal.Pick(id, hit/n)), endpoint: e.endpointFor(hit),
	}
}

// runClosed keeps Concurrency requests in flight until the duration or the
// request budget is spent. A closed-model request is intended when sent.
// Like every producer it returns when the schedule is over (all requests
// sent, the duration reached or ctx cancelled), so the grace period for
// in-flight requests starts only then.
func (e *engine) runClosed() {
	var hits atomic.Uint64
	var loops sync.WaitGroup
	defer e.waitUntil(&loops, e.p.Duration)
	clients := len(e.share.clients)
	loops.Add(clients)
	e.workers.Add(clients)
	// A segment that runs some identities only takes turns over those:
	// its k-th request goes where request k of a plan with just them would.
	lo, mine := uint64(e.share.lo), uint64(e.share.hi-e.share.lo)
	n := uint64(len(e.names))
	for range clients {
		go func() {
			defer e.workers.Done()
			defer loops.Done()
			rb := recBatch{e: e}
			defer rb.flush()
			for e.ctx.Err() == nil {
				hit := hits.Add(1) - 1
				if hit >= uint64(e.share.maxRequests) {
					return
				}
				at := e.elapsed()
				if at >= e.p.Duration {
					return
				}
				if mine < n {
					hit = hit/mine*n + lo + hit%mine
				}
				r, _ := e.exec(e.hitJob(hit, at))
				rb.add(r)
			}
		}()
	}
}

// holdIdle is how long an idle worker keeps its records before handing
// them to the collector. Handing over at every idle moment woke the
// collector once per request in a paced run, where every worker idles
// between requests; progress lags by at most this.
const holdIdle = 20 * time.Millisecond

// batchSize is how many records a busy loop holds before handing them
// over: small enough that progress lags by well under a millisecond of
// traffic per loop, large enough to spare most hand-offs.
const batchSize = 64

// recBatch collects one loop's records for the collector.
type recBatch struct {
	e *engine
	b []history.Record
}

func (rb *recBatch) add(r history.Record) {
	if rb.b == nil {
		select {
		case rb.b = <-rb.e.spare:
		default:
			rb.b = make([]history.Record, 0, batchSize)
		}
	}
	rb.b = append(rb.b, r)
	if len(rb.b) == batchSize {
		rb.flush()
	}
}

func (rb *recBatch) flush() {
	if len(rb.b) > 0 {
		rb.e.batches <- rb.b
		rb.b = nil
	}
}
