package traffic

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// runClients is the closed model with clients that obey their answers:
// Concurrency clients, client c always speaking for identity c mod
// Identities. Each sends a request; after a denial it waits as its
// workload.RetryPolicy says and sends the same request again (up to MaxAttempts in
// all); after any other answer, or once it gives up, it thinks for
// Plan.Think and sends its next request. A retry is intended at the end of
// its wait, so a late send shows as lag, and records what it was told and
// how long it waited. Every client stops at the run's duration or when the
// request budget is spent.
func (e *engine) runClients() {
	var mu sync.Mutex
	seqs := make([]uint64, len(e.names)) // each identity's request count, for the balancer
	budget := e.share.maxRequests
	take := func(id uint32) (uint64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if budget <= 0 {
			return 0, false
		}
		budget--
		seqs[id]++
		return seqs[id] - 1, true
	}
	done := make(chan struct{})
	e.workers.Add(len(e.share.clients))
	go func() {
		e.workers.Wait()
		close(done)
	}()
	for _, c := range e.share.clients {
		go func() {
			defer e.workers.Done()
			e.client(c, take)
		}()
	}
	// Like every producer, return when the schedule is over: the clients
	// stop by themselves at the duration, or here on cancellation.
	select {
	case <-done:
	case <-e.ctx.Done():
	}
}

// client is one retrying client's loop (see runClients).
func (e *engine) client(c int, take func(uint32) (uint64, bool)) {
	p := e.p
	id := uint32(c % len(e.names))
	rng := rand.New(rand.NewPCG(uint64(p.Seed), uint64(c)))
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	rb := recBatch{e: e}
	defer rb.flush()
	// sleepUntil waits until offset at of the run's clock; false when the
	// run ends first.
	sleepUntil := func(at time.Duration) bool {
		if at >= p.Duration {
			return false
		}
		if d := at - e.elapsed(); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-e.ctx.Done():
				timer.Stop()
				return false
			}
		}
		return e.ctx.Err() == nil
	}
	due := time.Duration(0)
	attempt, requests := 0, uint64(0)
	var told, lastReceived time.Duration
	var endpoint uint8
	for e.ctx.Err() == nil {
		if !sleepUntil(due) {
			return
		}
		seq, ok := take(id)
		if !ok {
			return
		}
		if attempt == 0 {
			// A retry goes to the endpoint of the request it repeats.
			endpoint = e.endpointFor(uint64(c)<<32 | requests)
			requests++
		}
		j := job{intended: due, identity: id, round: history.NoRound,
			gateway: uint16(e.bal.Pick(id, seq)), endpoint: endpoint}
		r, resp := e.exec(j)
		if attempt > 0 {
			r.Attempt, r.Told, r.Waited = uint8(attempt), told, r.Sent-lastReceived
		}
		rb.add(r)
		if r.Outcome == decision.Denied && attempt+1 < e.retry.MaxAttempts {
			attempt++
			hint := e.retry.Hint(resp.RetryAfter, resp.Reset)
			told = history.NoTime
			if hint >= 0 {
				told = hint
			}
			lastReceived = r.Received
			due = r.Received + e.retry.Wait(attempt, hint, rng.Float64())
			continue
		}
		attempt = 0
		due = r.Received + p.Think
	}
}
