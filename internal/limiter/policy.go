package limiter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

// Failure policy names, as scenario files write them (see package design).
const (
	OnErrorOpen       = design.OnErrorOpen
	OnErrorClosed     = design.OnErrorClosed
	OnErrorLocal      = design.OnErrorLocal
	OnFailoverTrust   = design.OnFailoverTrust
	OnFailoverDeny    = design.OnFailoverDeny
	DefaultTimeout    = design.DefaultTimeout
	DefaultCheckEvery = design.FailoverCheckEvery
)

// Policy is what a gateway does when Redis fails or fails over.
type Policy struct {
	// OnError is open, closed or local. Empty means no policy: the error is
	// returned and the request is recorded as an error.
	OnError string
	// Timeout bounds every call to the wrapped limiter (default 50ms), so a
	// stalled Redis cannot hang a request.
	Timeout time.Duration
	// Local is the allowance per gateway for on_error: local; zero means a
	// tenth of the limit (at least 1) per window.
	Local rate.Limit
	// OnFailover is trust (default) or deny.
	OnFailover string
	// CheckEvery is how often a gateway reads the failover marker
	// (default 50ms); only with OnFailover deny.
	CheckEvery time.Duration
}

// Validate checks the policy's names and durations.
func (p Policy) Validate() error {
	switch p.OnError {
	case "", OnErrorOpen, OnErrorClosed, OnErrorLocal:
	default:
		return fmt.Errorf("on_error %q (want open, closed or local)", p.OnError)
	}
	switch p.OnFailover {
	case "", OnFailoverTrust, OnFailoverDeny:
	default:
		return fmt.Errorf("on_failover %q (want trust or deny)", p.OnFailover)
	}
	if p.Timeout < 0 || p.CheckEvery < 0 {
		return errors.New("policy timeout and check interval must not be negative")
	}
	if !p.Local.IsZero() && (p.Local.Count <= 0 || p.Local.Window <= 0) {
		return fmt.Errorf("local allowance %v must be a positive count per positive window", p.Local)
	}
	return nil
}

// PolicyOption adds what a policy needs from its gateway.
type PolicyOption func(*policied)

// WithClock is the gateway's clock (default time.Now), used by the local
// allowance and the failover deny window.
func WithClock(c Clock) PolicyOption { return func(p *policied) { p.clock = c } }

// WithDetector gives on_failover: deny the gateway's failover detector.
// Without one, deny has nothing to observe and never fires.
func WithDetector(d *FailoverDetector) PolicyOption { return func(p *policied) { p.detector = d } }

// WithContextHonored says the wrapped limiter returns by its context's
// deadline on its own (a go-redis client with ContextTimeoutEnabled, or a
// local design), so the policy need not run each call in a goroutine to
// enforce the timeout. See HonorsContext.
func WithContextHonored(ok bool) PolicyOption { return func(p *policied) { p.direct = ok } }

// HonorsContext reports whether a go-redis client gives up when a
// context's deadline passes. Without ContextTimeoutEnabled it waits for its
// own read timeout (3s by default) instead, which is why WithPolicy, unless
// told otherwise, runs each call in a goroutine and stops waiting at the
// deadline.
func HonorsContext(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// WithPolicy wraps a Redis limiter with a failure policy. limit is the
// published limit (it sizes the default local allowance and the deny
// window after a failover). Every decision says which path decided:
// redis/lease from the wrapped limiter, fail-open, fail-closed or fallback.
func WithPolicy(l Limiter, p Policy, limit rate.Limit, opts ...PolicyOption) Limiter {
	w := &policied{inner: l, p: p, limit: limit, clock: time.Now}
	for _, o := range opts {
		o(w)
	}
	if w.p.Timeout <= 0 {
		w.p.Timeout = DefaultTimeout
	}
	if p.OnError == OnErrorLocal {
		local := p.Local
		if local.IsZero() {
			local = rate.Limit{Count: max(1, limit.Count/10), Window: limit.Window}
		}
		w.local = newLocalFixedWindow(local, w.clock, decision.ByFallback)
	}
	return w
}

type policied struct {
	inner    Limiter
	p        Policy
	limit    rate.Limit
	clock    Clock
	detector *FailoverDetector
	direct   bool
	local    *localFixedWindow
}

type result struct {
	d   Decision
	err error
}

// results recycles the channels of calls that returned in time; a channel
// abandoned at a deadline is left to its late goroutine and the collector.
var results = sync.Pool{New: func() any { return make(chan result, 1) }}

// Allow implements Limiter.
func (w *policied) Allow(ctx context.Context, id string, cost int64) (Decision, error) {
	if w.p.OnFailover == OnFailoverDeny && w.detector != nil {
		now := w.clock()
		w.detector.Poll(now)
		if at := w.detector.DetectedAt(); !at.IsZero() {
			if until := at.Add(w.limit.Window); now.Before(until) {
				return Decision{Remaining: -1, RetryAfter: until.Sub(now), Reset: until.Sub(now), By: decision.ByFailoverDeny}, nil
			}
		}
	}
	if lf, ok := w.inner.(*Lease); ok {
		// budget already leased is spent at memory speed: no deadline, no
		// goroutine, and no policy, since Redis is not involved
		if d, ok := lf.allowLocal(id, cost); ok {
			return d, nil
		}
	}
	d, err := w.call(ctx, id, cost)
	if err == nil {
		return d, nil
	}
	if ctx.Err() != nil {
		// the caller gave up (interrupted run): no policy applies
		return Decision{}, err
	}
	switch w.p.OnError {
	case OnErrorOpen:
		return Decision{Allowed: true, Remaining: -1, By: decision.ByFailOpen, Cause: err}, nil
	case OnErrorClosed:
		// RetryAfter stays 0: nobody knows when Redis is back
		return Decision{Remaining: -1, By: decision.ByFailClosed, Cause: err}, nil
	case OnErrorLocal:
		d, lerr := w.local.Allow(ctx, id, cost)
		d.Cause = err
		return d, lerr
	}
	return Decision{}, err
}

// deadliner is a limiter that takes its deadline as a value, sparing the
// context a policy would otherwise derive per decision, a cost on the hot
// path.
type deadliner interface {
	allowBy(ctx context.Context, id string, cost int64, deadline time.Time) (Decision, error)
}

func (w *policied) call(ctx context.Context, id string, cost int64) (Decision, error) {
	if dl, ok := w.inner.(deadliner); ok && w.direct {
		// Real time, not the gateway's (possibly skewed) clock.
		return dl.allowBy(ctx, id, cost, time.Now().Add(w.p.Timeout))
	}
	ctx, cancel := context.WithTimeout(ctx, w.p.Timeout)
	defer cancel()
	if w.direct {
		return w.inner.Allow(ctx, id, cost)
	}
	ch := results.Get().(chan result)
	go func() {
		d, err := w.inner.Allow(ctx, id, cost)
		ch <- result{d, err}
	}()
	select {
	case r := <-ch:
		results.Put(ch)
		return r.d, r.err
	case <-ctx.Done():
		return Decision{}, fmt.Errorf("limiter for %q: no answer within %v: %w", id, w.p.Timeout, ctx.Err())
	}
}
