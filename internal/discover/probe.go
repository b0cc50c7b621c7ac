package discover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/traffic"
)

// errBudget is returned when an identity has spent its request budget:
// the experiment that needed one more request stops there.
var errBudget = errors.New("request budget spent")

// errIdentities is returned when the run has used every identity it may.
var errIdentities = errors.New("no identity left")

// obs is one request's answer, with when it left and came back.
type obs struct {
	sent, recv time.Time
	out        decision.Outcome
	status     int
	retryAfter time.Duration // -1: none
	reset      time.Duration // -1: none
	remaining  int64         // -1: none
	precision  time.Duration
	err        error
}

func (o obs) admitted() bool { return o.out == decision.Allowed }
func (o obs) denied() bool   { return o.out == decision.Denied }
func (o obs) latency() time.Duration {
	return o.recv.Sub(o.sent)
}

// mid is the middle of the request's flight: where its decision most
// likely fell.
func (o obs) mid() time.Time { return o.sent.Add(o.recv.Sub(o.sent) / 2) }

// prober sends requests for the run's identities and holds each to the
// budget.
type prober struct {
	t        traffic.Target
	budget   int
	maxIDs   int
	gateways int
	prefix   string

	mu       sync.Mutex
	counts   []int
	hist     [][]obs // every answer, per identity, in order sent
	forms    traffic.Form
	errs     int
	answered int
	lastErr  error
	statuses map[int]int
}

func newProber(t traffic.Target, budget, maxIDs int, prefix string) *prober {
	if prefix == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		prefix = "rlctl-discover-" + hex.EncodeToString(b[:])
	}
	return &prober{t: t, budget: budget, maxIDs: maxIDs, gateways: len(t.Gateways()), prefix: prefix, statuses: map[int]int{}}
}

// newID allocates a fresh identity of the run's own.
func (p *prober) newID() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.counts) >= p.maxIDs {
		return 0, errIdentities
	}
	p.counts = append(p.counts, 0)
	p.hist = append(p.hist, nil)
	return len(p.counts) - 1, nil
}

func (p *prober) name(id int) string { return fmt.Sprintf("%s-%d", p.prefix, id) }

// warm opens, when the target can, the connections n requests at once
// need before they are sent, so no dial lands between a request's send
// time and its arrival: requests "sent at once" then arrive at once.
// Where it cannot, each request dials its own, as before.
func (p *prober) warm(ctx context.Context, n int) {
	if w, ok := p.t.(traffic.Warmer); ok {
		_ = w.Warm(ctx, n)
	}
}

// left is how many requests identity id may still send.
func (p *prober) left(id int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.budget - p.counts[id]
}

// take books one request of identity id, or says the budget is spent.
func (p *prober) take(id int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts[id] >= p.budget {
		return errBudget
	}
	p.counts[id]++
	return nil
}

// do sends one request of identity id through gateway gw.
func (p *prober) do(ctx context.Context, id, gw int) (obs, error) {
	if err := ctx.Err(); err != nil {
		return obs{}, err
	}
	if err := p.take(id); err != nil {
		return obs{}, err
	}
	sent := time.Now()
	r := p.t.Do(ctx, traffic.Request{Identity: uint32(id), ID: p.name(id), Gateway: gw})
	o := obs{sent: sent, recv: time.Now(), out: r.Outcome, status: r.Status, retryAfter: r.RetryAfter,
		reset: r.Reset, remaining: r.Remaining, precision: r.HintPrecision, err: r.Err}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hist[id] = append(p.hist[id], o)
	p.forms |= r.Form
	if r.Status != 0 {
		p.statuses[r.Status]++
	}
	if o.out == decision.Error {
		if ctx.Err() != nil {
			return o, ctx.Err()
		}
		p.errs++
		p.lastErr = r.Err
		// A target that answers mostly errors is not a limiter being
		// measured: stop rather than read errors as a policy.
		if p.errs >= 10 && p.errs*2 > p.answered+p.errs {
			return o, fmt.Errorf("%w: %d of %d answers were errors, the last: %v", ErrTargetErrors, p.errs, p.answered+p.errs, r.Err)
		}
		return o, nil
	}
	p.answered++
	return o, nil
}

// ErrTargetErrors means the target answered mostly errors (5xx, resets,
// timeouts), so no policy could be read from it.
var ErrTargetErrors = errors.New("the target answered errors")

// commonStatus is the most frequent status outside 2xx, and its count.
func (p *prober) commonStatus() (status, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s, c := range p.statuses {
		if (s < 200 || s > 299) && (c > n || c == n && s < status) {
			status, n = s, c
		}
	}
	return status, n
}

// history returns identity id's answers, in the order they were sent.
func (p *prober) history(id int) []obs {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := append([]obs(nil), p.hist[id]...)
	slices.SortFunc(h, func(a, b obs) int { return a.sent.Compare(b.sent) })
	return h
}

// counted returns the requests sent per identity.
func (p *prober) counted() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.counts...)
}

// sleepUntil waits until t or until ctx is done.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// nextPhase is the first instant at or after now whose offset in the
// epoch-aligned windows of length w is phase·w: where a window that
// starts at Unix multiples of w is at that fraction.
func nextPhase(now time.Time, w time.Duration, phase float64) time.Time {
	if w <= 0 {
		return now
	}
	ns := now.UnixNano()
	start := ns - ns%int64(w)
	at := start + int64(phase*float64(w))
	if at < ns {
		at += int64(w)
	}
	return time.Unix(0, at)
}

// epochPhase is where t falls in epoch-aligned windows of length w, from
// 0 to 1.
func epochPhase(t time.Time, w time.Duration) float64 {
	if w <= 0 {
		return 0
	}
	ns := t.UnixNano()
	return float64(ns%int64(w)) / float64(w)
}
