package traffic

import (
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/history"
)

// runPaced is the open model of the paced patterns (constant, ramp,
// burst). Its workers take the schedule's hits in turn: each takes the
// next hit no worker took yet, waits until it is due and sends it itself,
// then takes the next. A request thus leaves from the goroutine that woke
// for it, with no hand-off that wakes a second one, and as many hits are
// waited for as workers are idle.
//
// A hit that came due while every other worker was busy with a request
// found none free at its time: it is dropped (tallied, never sent), and
// every such hit goes at once, so under overload a worker goes from one
// request to the next as a closed-model client does. A hit overdue while
// another worker is free (the machine stalled them all) is sent late, its
// lag recorded, as a free worker would have sent it.
//
// A segment walks the whole plan's schedule, so it stops where the whole
// plan would (duration or MaxRequests), and sends only its own requests.
// Like every producer it returns when the schedule is over: every worker
// found no hit left and its last request answered, or the last hit is due
// (a worker may hang on the target), so the grace period for in-flight
// requests starts then.
func (e *engine) runPaced() {
	last, ok := lastDue(e.pc, uint64(e.p.MaxRequests))
	if !ok {
		return
	}
	n := e.p.Workers
	e.free.Store(int64(n))
	e.loopDrops = make([]history.Drops, n)
	var loops sync.WaitGroup
	loops.Add(n)
	e.workers.Add(n)
	for w := range n {
		go func() {
			defer e.workers.Done()
			defer loops.Done()
			e.paceLoop(&e.loopDrops[w])
		}()
	}
	e.waitUntil(&loops, last)
}

// paceLoop is one worker of runPaced; drops is its tally of the hits it
// dropped.
func (e *engine) paceLoop(drops *history.Drops) {
	wk := newWaker(e, 0, nil)
	defer wk.close()
	rb := recBatch{e: e}
	defer rb.flush()
	var unshown uint64
	defer func() { e.dropped.Add(unshown) }()
	var held time.Duration // when rb's oldest record was added
	for {
		now := e.elapsed()
		t, ok := e.sched.take(e, now)
		if !ok {
			return
		}
		if t.drop {
			for h := t.hit; h < t.end; h++ {
				if !e.share.ownsHit(h, len(e.names)) {
					continue
				}
				at, _ := e.pc.Due(h)
				j := e.hitJob(h, at)
				drops.Add(at, j.identity, j.gateway, j.endpoint)
				unshown++
			}
			if unshown >= checkEvery {
				e.dropped.Add(unshown)
				unshown = 0
				if e.ctx.Err() != nil {
					return
				}
			}
			continue
		}
		if t.wake > now {
			// About to idle: show the drops, and hand the records over
			// when the wait or their age passes holdIdle, so progress
			// stays current at a low rate.
			if len(rb.b) > 0 && (t.wake-now >= holdIdle || now-held >= holdIdle) {
				rb.flush()
			}
			e.dropped.Add(unshown)
			unshown = 0
		}
		if !wk.until(t.wake) {
			return
		}
		e.free.Add(-1)
		r, _ := e.exec(e.hitJob(t.hit, t.at))
		e.free.Add(1)
		if len(rb.b) == 0 {
			held = r.Received
		}
		rb.add(r)
	}
}

// schedule is a paced run's schedule as its workers take it.
type schedule struct {
	mu       sync.Mutex
	next     uint64        // the next hit no worker took yet
	lastWake time.Duration // when the latest hit taken wakes its worker
}

// turn is a worker's next move: send hit at wake (it was due at at), or
// drop the hits from hit to end.
type turn struct {
	hit, end uint64
	at, wake time.Duration
	drop     bool
}

// take gives the worker asking at now its next turn, false when the
// schedule is over. Hits of other segments are passed over.
//
// A hit due while every other worker is busy, and every hit due before
// now with it, is dropped. A hit due within minWake after the latest wake
// taken joins the wake after it (at most minWake late), so at a rate
// above 1/minWake the workers of one wake wake together and Redis and the
// gateways see a few requests per wake, not one wake each; a hit due
// within spinBelow is sent at once (an overloaded run).
func (s *schedule) take(e *engine, now time.Duration) (turn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		at, ok := e.due(s.next)
		if !ok {
			return turn{}, false
		}
		if at < now && e.free.Load() <= 1 {
			end := dueFrom(e.pc, uint64(e.p.MaxRequests), s.next, now)
			t := turn{hit: s.next, end: end, drop: true}
			s.next = end
			return t, true
		}
		hit := s.next
		s.next++
		if !e.share.ownsHit(hit, len(e.names)) {
			continue
		}
		wake := at
		if at-now >= spinBelow {
			if at <= s.lastWake {
				wake = s.lastWake
			} else if at < s.lastWake+minWake {
				// Never past the run's end: a hit due within it is sent.
				wake = min(s.lastWake+minWake, max(at, e.p.Duration))
			}
		}
		s.lastWake = max(s.lastWake, wake)
		return turn{hit: hit, end: hit + 1, at: at, wake: wake}, true
	}
}

// checkEvery is how many requests a waker lets through behind the
// schedule before it reads the clock and the context again, and how many
// drops a worker tallies before it shows them: a cancelled run stops
// within that many.
const checkEvery = 256

// A waker waits for offsets of the run's clock for one goroutine: the
// producer of the boundary and race patterns, or one worker of a paced
// run. It wakes at most once per its minWake.
type waker struct {
	e       *engine
	timer   *time.Timer
	sleeper sleeper
	minWake time.Duration
	// beforeWait, when set, is called when the waker is about to wait.
	beforeWait func()
	lastWake   time.Duration // when it last woke from a sleep
	// seen is the latest it read the run's clock: a request due by then
	// needs no new reading.
	seen      time.Duration
	unchecked int // requests let through on seen since the last check
}

func newWaker(e *engine, minWake time.Duration, beforeWait func()) *waker {
	tm := time.NewTimer(time.Hour)
	tm.Stop()
	return &waker{e: e, timer: tm, sleeper: newSleeper(), minWake: minWake, beforeWait: beforeWait}
}

func (w *waker) close() { w.sleeper.close() }

// until waits until offset at of the run's clock; false when the run was
// cancelled or at lies past its duration. A request due sooner than
// minWake after the last wake waits for the next one, so one wake serves
// every request then due.
func (w *waker) until(at time.Duration) bool {
	e := w.e
	if at > e.p.Duration {
		return false
	}
	if at <= w.seen && w.unchecked < checkEvery {
		// Behind the schedule (overload): due without reading the clock
		// (or, but every checkEvery requests, the context).
		w.unchecked++
		return true
	}
	w.unchecked = 0
	if w.seen = e.elapsed(); at <= w.seen {
		return e.ctx.Err() == nil
	}
	if w.beforeWait != nil {
		w.beforeWait()
	}
	wake := max(at, w.lastWake+w.minWake)
	if d := wake - e.elapsed() - preciseSpan; d > 0 {
		w.timer.Reset(d)
		select {
		case <-w.timer.C:
		case <-e.ctx.Done():
			w.timer.Stop()
			return false
		}
	}
	if d := wake - e.elapsed(); d >= spinBelow {
		w.sleeper.sleep(d) // at most preciseSpan (see sleep.go)
	}
	for e.elapsed() < wake {
		runtime.Gosched() // less than a sleep's own cost (see spinBelow)
	}
	w.lastWake = e.elapsed()
	w.seen = w.lastWake
	return e.ctx.Err() == nil
}

// due is when hit is due, false past the schedule (its length, or
// MaxRequests).
func (e *engine) due(hit uint64) (time.Duration, bool) {
	if hit >= uint64(e.p.MaxRequests) {
		return 0, false
	}
	return e.pc.Due(hit)
}

// dueFrom is the first hit from hit on that is due at or after t, or the
// end of pc's schedule within limit hits: hit itself is due before t.
func dueFrom(pc Pacer, limit, hit uint64, t time.Duration) uint64 {
	before := func(h uint64) bool {
		at, ok := pc.Due(h)
		return h < limit && ok && at < t
	}
	// Gallop past the hits due before t, then halve back to the first
	// that is not.
	lo, step := hit, uint64(1) // before(lo)
	for before(lo + step) {
		lo += step
		step *= 2
	}
	hi := lo + step // not before(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if before(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// lastDue is when the last hit of pc's schedule within limit hits is due;
// false when it has none.
func lastDue(pc Pacer, limit uint64) (time.Duration, bool) {
	if _, ok := pc.Due(0); !ok || limit == 0 {
		return 0, false
	}
	at, _ := pc.Due(dueFrom(pc, limit, 0, math.MaxInt64) - 1)
	return at, true
}
