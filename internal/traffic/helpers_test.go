package traffic

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
)

// windowLimiter is a real in-process fixed-window limiter behind a set of
// gateways, the target the engine is tested against. With epoch set,
// windows start at multiples of W since the Unix epoch; otherwise an
// identity's first request after its window ended opens the next one.
// checkThenSet splits the check and the increment (with pause between) to
// reproduce the check-then-increment race.
type windowLimiter struct {
	limit        int64
	window       time.Duration
	epoch        bool
	gateways     int
	delay        time.Duration // added to every decision
	checkThenSet bool
	pause        time.Duration
	noHints      bool // answer without Reset or RetryAfter, like a bare 429
	retryOnly    bool // answer a denial with RetryAfter and nothing with Reset

	mu    sync.Mutex
	state map[string]*fixedWin
	calls int
}

type fixedWin struct {
	start time.Time
	count int64
}

func newWindowLimiter(limit int64, window time.Duration, gateways int) *windowLimiter {
	return &windowLimiter{limit: limit, window: window, gateways: gateways, state: map[string]*fixedWin{}}
}

func (l *windowLimiter) Gateways() []string {
	n := make([]string, l.gateways)
	for i := range n {
		n[i] = fmt.Sprintf("gw-%d", i)
	}
	return n
}

func (l *windowLimiter) Endpoints() []string { return []string{"default"} }
func (l *windowLimiter) Close() error        { return nil }

// current returns id's window at now, rolling it when it has ended. l.mu held.
func (l *windowLimiter) current(id string, now time.Time) *fixedWin {
	w := l.state[id]
	var start time.Time
	if l.epoch {
		ns := now.UnixNano()
		start = time.Unix(0, ns-ns%int64(l.window))
	} else {
		start = now
	}
	if w == nil || !now.Before(w.start.Add(l.window)) {
		w = &fixedWin{start: start}
		l.state[id] = w
	}
	return w
}

func (l *windowLimiter) Do(ctx context.Context, r Request) Response {
	if r.Gateway < 0 || r.Gateway >= l.gateways {
		return ErrResponse(fmt.Errorf("no gateway %d", r.Gateway))
	}
	if l.delay > 0 {
		select {
		case <-time.After(l.delay):
		case <-ctx.Done():
			return ErrResponse(ctx.Err())
		}
	}
	denied := Response{Outcome: decision.Denied, Remaining: 0, RetryAfter: -1, Reset: -1}
	if l.checkThenSet {
		l.mu.Lock()
		l.calls++
		seen := l.current(r.ID, time.Now()).count
		l.mu.Unlock()
		time.Sleep(l.pause)
		denied.By = decision.ByRedis
		if seen >= l.limit {
			return denied
		}
		l.mu.Lock()
		l.current(r.ID, time.Now()).count++
		l.mu.Unlock()
		return Response{Outcome: decision.Allowed, By: decision.ByRedis, Remaining: -1, RetryAfter: -1, Reset: -1}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	now := time.Now()
	w := l.current(r.ID, now)
	out := Response{Outcome: decision.Allowed, By: decision.ByLocal, RetryAfter: -1, Reset: -1, Decided: now}
	reset := w.start.Add(l.window).Sub(now)
	if !l.noHints && !l.retryOnly && reset > 0 {
		out.Reset = reset
	}
	if w.count >= l.limit {
		out.Outcome, out.Remaining = decision.Denied, 0
		if !l.noHints && reset > 0 {
			out.RetryAfter = reset
		}
		return out
	}
	w.count++
	out.Remaining = l.limit - w.count
	return out
}

// instant is a target that answers at once without locks, for measuring the
// engine's own overhead.
type instant struct{ gws, eps []string }

func (instant) Do(ctx context.Context, r Request) Response {
	return Response{Outcome: decision.Allowed, RetryAfter: -1, Remaining: -1, Reset: -1}
}
func (i instant) Gateways() []string  { return i.gws }
func (i instant) Endpoints() []string { return i.eps }
func (instant) Close() error          { return nil }

func newInstant(gateways int) instant {
	g := make([]string, gateways)
	for i := range g {
		g[i] = fmt.Sprintf("gw-%d", i)
	}
	return instant{gws: g, eps: []string{"default"}}
}
