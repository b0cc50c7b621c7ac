package traffic

import (
	"math"
	"runtime"
	"time"

	"github.com/rlctl/rlctl/internal/history"
)

// pull runs on a worker of a paced pattern that has just finished a
// request. It takes the hits of the schedule nobody took yet that are due,
// or due within spinBelow while every other worker is busy, and sends them
// itself, waiting for each. A hit that came due while this worker and every
// other one were busy found no worker free at its time: it is dropped
// (tallied in drops, never sent), all such hits taken at once. So under
// overload a worker goes from one request to the next as a closed-model
// client does, with no hand-off from the producer and no wake-up per
// request, and the producer waits (see runPaced); below it, a worker that
// frees between the producer's wakes sends what came due meanwhile. It
// returns when the next hit is further off (the producer hands that one
// out) or the schedule is over.
//
// A drop here is decided as the producer decides one (no worker free when
// rlctl got to the hit), only sooner: the producer wakes at most every
// minWake.
func (e *engine) pull(rb *recBatch, drops *history.Drops) {
	n := len(e.names)
	var unshown uint64
	defer func() { e.dropped.Add(unshown) }()
	for {
		hit := e.next.Load()
		at, ok := e.due(hit)
		if !ok {
			return
		}
		// A hit due soon is this worker's to wait for only while every
		// other one is busy: otherwise the producer hands it out on time
		// and this worker need not spin.
		now := e.elapsed()
		if at > now && (at-now >= spinBelow || e.free.Load() > 0) {
			return
		}
		if at < now && e.free.Load() <= 0 {
			// Every hit due before now: taken at once, dropped.
			end := dueFrom(e.pc, uint64(e.p.MaxRequests), hit, now)
			if !e.next.CompareAndSwap(hit, end) {
				continue // the producer or another worker took some
			}
			for h := hit; h < end; h++ {
				if !e.share.ownsHit(h, n) {
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
		if !e.next.CompareAndSwap(hit, hit+1) {
			continue // the producer or another worker took it
		}
		if !e.share.ownsHit(hit, n) {
			continue
		}
		j := e.hitJob(hit, at)
		for e.elapsed() < at {
			runtime.Gosched()
		}
		if e.ctx.Err() != nil {
			return
		}
		r, _ := e.exec(j)
		rb.add(r)
	}
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

// waitIdle waits until a worker is free, or the offset last has passed;
// false when the run was cancelled.
func (e *engine) waitIdle(last time.Duration) bool {
	e.showDrops()
	tm := time.NewTimer(max(last-e.elapsed(), 0))
	defer tm.Stop()
	for e.free.Load() <= 0 {
		select {
		case <-e.idle:
		case <-tm.C:
			return e.ctx.Err() == nil
		case <-e.ctx.Done():
			return false
		}
	}
	return true
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
