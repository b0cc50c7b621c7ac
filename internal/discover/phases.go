package discover

import (
	"context"
	"slices"
	"sync"
	"time"
)

// burstResult is what a back-to-back run of requests of one identity saw.
type burstResult struct {
	obs      []obs
	admitted int  // admitted before the first denial
	denial   *obs // the first denial, nil when none came
	// queued says the answers came slower and slower while admitted: a
	// limiter that delays requests instead of denying them.
	queued bool
	// base is the quickest admitted answer's latency, -1 when none came.
	base time.Duration
}

func (b burstResult) first() obs { return b.obs[0] }

// joined is b and then more, one identity's burst that went on: b ended
// on late answers, not a denial.
func (b burstResult) joined(more burstResult) burstResult {
	out := burstResult{obs: append(slices.Clip(b.obs), more.obs...), admitted: b.admitted + more.admitted,
		queued: more.queued, base: more.base}
	if more.denial != nil {
		out.denial = &out.obs[len(b.obs)+slices.IndexFunc(more.obs, func(o obs) bool { return o.denied() })]
	}
	return out
}

// burst sends requests of identity id back to back (each once the previous
// answered) until the first denial, at most n.
func (e *engine) burst(ctx context.Context, id, gw, n int) (burstResult, error) {
	return e.sendBurst(ctx, id, gw, n, -1, false)
}

// lateFactor is how many times the quickest answer an admitted answer must
// take to count as late in a watched burst (see sendBurst).
const lateFactor = 8

// sendBurst is burst; with watch it also stops when the admitted answers
// come late again and again (a queue), late against base, the quickest
// answer an earlier watched burst saw (-1: none) or this one's. Only the first
// burst watches: once the class is known, late answers are a loaded
// machine's, and a burst that stopped on them would leave quota unspent.
func (e *engine) sendBurst(ctx context.Context, id, gw, n int, base time.Duration, watch bool) (b burstResult, err error) {
	defer func() { b.base = base }()
	var late []time.Duration // the admitted answers' latencies since the last quick one
	calibrated := false
	for len(b.obs) < n && e.before(time.Now()) {
		o, err := e.p.do(ctx, id, gw)
		if err != nil {
			return b, err
		}
		b.obs = append(b.obs, o)
		if o.denied() {
			b.denial = &b.obs[len(b.obs)-1]
			return b, nil
		}
		if !o.admitted() {
			continue
		}
		b.admitted++
		if !watch {
			continue
		}
		lat := o.latency()
		if base < 0 || lat < base {
			base = lat
		}
		// Queued answers come about one period late each, in a row; a
		// loaded machine's stall is one late answer among quick ones.
		if lat <= 15*time.Millisecond {
			late = late[:0]
			continue
		}
		late = append(late, lat)
		if len(late) < 4 {
			continue
		}
		// The least late of the last four: all four were late by it.
		least := slices.Min(late[len(late)-4:])
		if !calibrated && least <= lateFactor*base {
			// Late, but not against the quickest answer: that one may have
			// been slow itself (a busy machine, a connection dialed). A
			// fresh identity's first request is never queued behind this
			// one's, so its answer says how quick the target is.
			calibrated = true
			if q, ok := e.quickAnswer(ctx, gw); ok && q < base {
				e.note("the first burst's quickest answer took %v, a fresh identity's first %v: later answers were judged late against the fresh one's", base.Round(100*time.Microsecond), q.Round(100*time.Microsecond))
				base = q
			}
		}
		if least > lateFactor*base {
			b.queued = true
			return b, nil
		}
	}
	return b, nil
}

// quickAnswer is the latency of one request of a fresh identity through
// gateway gw, ok false when no identity is left or it was not admitted.
func (e *engine) quickAnswer(ctx context.Context, gw int) (time.Duration, bool) {
	id, err := e.p.newID()
	if err != nil {
		return 0, false
	}
	o, err := e.p.do(ctx, id, gw)
	if err != nil || !o.admitted() {
		return 0, false
	}
	return o.latency(), true
}

// pollResult is what polling one identity for its next admission saw.
type pollResult struct {
	denials []obs
	admit   *obs
	strays  int // admissions pollReset did not take for a reset
	back    int // with pollReset: how much of the quota came back
}

// lastDenied is the last denial before the admission (or of all).
func (p pollResult) lastDenied() *obs {
	if len(p.denials) == 0 {
		return nil
	}
	return &p.denials[len(p.denials)-1]
}

// poll sends one request of identity id at from+e0, from+e1, ... where
// each offset grows by ratio (at least minStep) until one is admitted, at
// most n requests, or stop says to give up (checked before each).
func (e *engine) poll(ctx context.Context, id, gw int, from time.Time, e0 time.Duration, ratio float64, minStep time.Duration, n int, stop func() bool) (pollResult, error) {
	return e.pollWatch(ctx, id, gw, from, e0, ratio, minStep, n, stop, nil)
}

// pollWatch is poll with a look at every answer (watch may be nil).
func (e *engine) pollWatch(ctx context.Context, id, gw int, from time.Time, e0 time.Duration, ratio float64, minStep time.Duration, n int, stop func() bool, watch func(obs)) (pollResult, error) {
	var pr pollResult
	off := e0
	for range max(n, 0) {
		if err := sleepUntil(ctx, from.Add(off)); err != nil {
			return pr, err
		}
		if stop != nil && stop() {
			return pr, nil
		}
		o, err := e.p.do(ctx, id, gw)
		if err != nil {
			return pr, err
		}
		if watch != nil {
			watch(o)
		}
		if o.admitted() {
			pr.admit = &o
			return pr, nil
		}
		if o.denied() {
			pr.denials = append(pr.denials, o)
		}
		off = max(time.Duration(float64(off)*ratio), off+minStep)
		if !e.before(from.Add(off)) {
			return pr, nil
		}
	}
	return pr, nil
}

// trainResult is a paced train's answers.
type trainResult struct {
	obs []obs
}

func (t trainResult) admittedObs() []obs {
	var out []obs
	for _, o := range t.obs {
		if o.admitted() {
			out = append(out, o)
		}
	}
	return out
}

// rate is the admitted rate between the first and the last admission of
// the train, per second, and how many admissions it rests on.
func (t trainResult) rate() (float64, int) {
	a := t.admittedObs()
	if len(a) < 2 {
		return 0, len(a)
	}
	d := a[len(a)-1].mid().Sub(a[0].mid()).Seconds()
	if d <= 0 {
		return 0, len(a)
	}
	return float64(len(a)-1) / d, len(a)
}

// train sends n requests of identity id, one every period, each at its
// scheduled offset from the start (so a slow answer does not shift the
// rest), several in flight when answers are slower than the period.
func (e *engine) train(ctx context.Context, id, gw int, period time.Duration, n int) (trainResult, error) {
	start := time.Now()
	var mu sync.Mutex
	var tr trainResult
	var wg sync.WaitGroup
	var firstErr error
	for i := range n {
		if err := sleepUntil(ctx, start.Add(time.Duration(i)*period)); err != nil {
			firstErr = err
			break
		}
		if !e.before(time.Now()) {
			break
		}
		wg.Go(func() {
			o, err := e.p.do(ctx, id, gw)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			tr.obs = append(tr.obs, o)
		})
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
	}
	wg.Wait()
	slices.SortFunc(tr.obs, func(a, b obs) int { return a.sent.Compare(b.sent) })
	return tr, firstErr
}

// together sends n requests of identity id at once, all in flight
// together, and returns their answers in the order they came back.
func (e *engine) together(ctx context.Context, id, gw, n int) ([]obs, error) {
	e.p.warm(ctx, n)
	out := make([]obs, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = e.p.do(ctx, id, gw) })
	}
	wg.Wait()
	var got []obs
	for i, err := range errs {
		if err != nil {
			return nil, err
		}
		got = append(got, out[i])
	}
	slices.SortFunc(got, func(a, b obs) int { return a.recv.Compare(b.recv) })
	return got, nil
}

// drain sends requests of identity id back to back until the first
// denial (at most n) and counts the admitted: what was left of its quota.
func (e *engine) drain(ctx context.Context, id, gw, n int) (int, *obs, error) {
	b, err := e.burst(ctx, id, gw, n)
	return b.admitted, b.denial, err
}
