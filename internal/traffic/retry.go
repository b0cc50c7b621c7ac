package traffic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// What a retrying client waits for after a denial (RetryPolicy.Honor).
const (
	// HonorRetryAfter waits at least the answer's Retry-After, as RFC 9110
	// and the RateLimit draft ask; an answer without one gets the backoff.
	HonorRetryAfter = "retry-after"
	// HonorReset waits at least until the reset the answer announced
	// (draft 11's effective window t, RateLimit-Reset, X-RateLimit-Reset).
	HonorReset = "ratelimit-reset"
	// HonorFixed ignores the answer and waits the backoff alone.
	HonorFixed = "fixed"
)

// Backoffs: how the wait grows with each retry of one request.
const (
	BackoffExponential = "exponential" // Delay·2^(k−1) for the k-th retry, at most MaxDelay
	BackoffConstant    = "constant"    // Delay every time
)

// Jitters: how a client randomises its wait (the terms of the AWS
// Architecture Blog's "Exponential Backoff and Jitter").
const (
	JitterNone  = "none"  // the backoff B exactly
	JitterFull  = "full"  // uniform in [0, B)
	JitterEqual = "equal" // B/2 plus uniform in [0, B/2)
)

// Defaults of a RetryPolicy's zero fields.
const (
	DefaultRetryDelay    = 100 * time.Millisecond
	DefaultRetryMaxDelay = 10 * time.Second
	DefaultMaxAttempts   = 5
)

// RetryPolicy is how a closed-model client answers a denial, as a client
// library would: it waits, then sends the same request again, up to
// MaxAttempts attempts in all, then gives the request up.
//
// The wait for the k-th retry is the honoured hint (none for HonorFixed,
// or when the answer carried none) plus the jittered backoff: with a hint,
// JitterNone adds nothing (the client comes back exactly when told) and
// the other jitters add their share of B, spreading clients after the
// moment they were told; without a hint the jittered backoff is the whole
// wait. B is Delay·2^(k−1) up to MaxDelay (exponential) or Delay
// (constant).
//
// Example: honor retry-after, exponential from 100ms, full jitter; an
// answer with Retry-After 1s makes the first retry wait between 1s and
// 1.1s, the second (after another Retry-After 1s) between 1s and 1.2s.
type RetryPolicy struct {
	Honor       string
	Backoff     string
	Jitter      string
	Delay       time.Duration
	MaxDelay    time.Duration
	MaxAttempts int
}

// Normalize fills the zero fields with their defaults and checks the
// policy; the error wraps ErrInvalidPlan.
func (p RetryPolicy) Normalize() (RetryPolicy, error) {
	if p.Honor == "" {
		p.Honor = HonorRetryAfter
	}
	if p.Backoff == "" {
		p.Backoff = BackoffExponential
	}
	if p.Jitter == "" {
		p.Jitter = JitterNone
	}
	if p.Delay == 0 {
		p.Delay = DefaultRetryDelay
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = max(DefaultRetryMaxDelay, p.Delay)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	switch {
	case p.Honor != HonorRetryAfter && p.Honor != HonorReset && p.Honor != HonorFixed:
		return p, planErr("unknown retry honor %q (want retry-after, ratelimit-reset or fixed)", p.Honor)
	case p.Backoff != BackoffExponential && p.Backoff != BackoffConstant:
		return p, planErr("unknown retry backoff %q (want exponential or constant)", p.Backoff)
	case p.Jitter != JitterNone && p.Jitter != JitterFull && p.Jitter != JitterEqual:
		return p, planErr("unknown retry jitter %q (want none, full or equal)", p.Jitter)
	case p.Delay < 0 || p.MaxDelay < p.Delay:
		return p, planErr("retry delay %s and max delay %s: want 0 <= delay <= max delay", p.Delay, p.MaxDelay)
	case p.MaxAttempts < 1 || p.MaxAttempts > math.MaxUint8:
		return p, planErr("retry max attempts %d: want 1 to %d", p.MaxAttempts, math.MaxUint8)
	}
	return p, nil
}

// backoff is B for the k-th retry (k ≥ 1).
func (p RetryPolicy) backoff(k int) time.Duration {
	if p.Backoff == BackoffConstant {
		return p.Delay
	}
	b := p.Delay
	for i := 1; i < k && b < p.MaxDelay; i++ {
		b *= 2
	}
	return min(b, p.MaxDelay)
}

// Hint is what the policy honours in an answer: its Retry-After or its
// reset, or -1 when it honours neither or the answer carried none.
func (p RetryPolicy) Hint(r Response) time.Duration {
	switch p.Honor {
	case HonorRetryAfter:
		return r.RetryAfter
	case HonorReset:
		return r.Reset
	}
	return -1
}

// Wait is how long a client waits before its k-th retry (k ≥ 1) after an
// answer whose honoured hint is hint (negative: none), with u a uniform
// random number in [0, 1). It is pure, so tests need no clock.
func (p RetryPolicy) Wait(k int, hint time.Duration, u float64) time.Duration {
	b := p.backoff(k)
	var j time.Duration
	switch p.Jitter {
	case JitterFull:
		j = time.Duration(u * float64(b))
	case JitterEqual:
		j = b/2 + time.Duration(u*float64(b/2))
	default:
		j = b
	}
	if hint < 0 {
		return j
	}
	if p.Jitter == JitterNone {
		return hint
	}
	return hint + j
}

// String describes the policy for reports.
func (p RetryPolicy) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "honor %s, ", p.Honor)
	switch p.Backoff {
	case BackoffConstant:
		fmt.Fprintf(&b, "constant backoff %s", p.Delay)
	default:
		fmt.Fprintf(&b, "exponential backoff from %s to %s", p.Delay, p.MaxDelay)
	}
	fmt.Fprintf(&b, ", jitter %s, at most %d attempts", p.Jitter, p.MaxAttempts)
	return b.String()
}

// runClients is the closed model with clients that obey their answers:
// Concurrency clients, client c always speaking for identity c mod
// Identities. Each sends a request; after a denial it waits as its
// RetryPolicy says and sends the same request again (up to MaxAttempts in
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
			hint := e.retry.Hint(resp)
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
