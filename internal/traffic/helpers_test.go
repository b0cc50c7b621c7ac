package traffic

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/limiter"
)

// windowLimiter is a real in-process fixed-window limiter behind a set of
// gateways, the Decider the engine is tested against. With epoch set,
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

func (l *windowLimiter) Names() []string {
	n := make([]string, l.gateways)
	for i := range n {
		n[i] = fmt.Sprintf("gw-%d", i)
	}
	return n
}

func (l *windowLimiter) Endpoints() []string { return []string{"default"} }

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

func (l *windowLimiter) Decide(ctx context.Context, gateway, endpoint int, id string) (limiter.Decision, error) {
	if gateway < 0 || gateway >= l.gateways {
		return limiter.Decision{}, fmt.Errorf("no gateway %d", gateway)
	}
	if l.delay > 0 {
		select {
		case <-time.After(l.delay):
		case <-ctx.Done():
			return limiter.Decision{}, ctx.Err()
		}
	}
	if l.checkThenSet {
		l.mu.Lock()
		l.calls++
		seen := l.current(id, time.Now()).count
		l.mu.Unlock()
		time.Sleep(l.pause)
		if seen >= l.limit {
			return limiter.Decision{Allowed: false, Remaining: 0, By: decision.ByRedis}, nil
		}
		l.mu.Lock()
		l.current(id, time.Now()).count++
		l.mu.Unlock()
		return limiter.Decision{Allowed: true, Remaining: -1, By: decision.ByRedis}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	now := time.Now()
	w := l.current(id, now)
	reset := w.start.Add(l.window).Sub(now)
	if l.noHints {
		reset = 0
	}
	if w.count >= l.limit {
		return limiter.Decision{Remaining: 0, RetryAfter: reset, Reset: reset, By: decision.ByLocal, ServerTime: now}, nil
	}
	w.count++
	return limiter.Decision{Allowed: true, Remaining: l.limit - w.count, Reset: reset, By: decision.ByLocal, ServerTime: now}, nil
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

// counts tallies a history's outcomes.
func counts(h *history.History) map[decision.Outcome]int {
	c := map[decision.Outcome]int{}
	// A long benchmark run spills: read it a chunk at a time.
	_ = h.Chunks(func(ch *history.History) error {
		for i := range ch.Len() {
			c[ch.Outcome(i)]++
		}
		return nil
	})
	return c
}

// errorsSeen wraps a target and keeps the first few error messages, so a
// failing test can say what went wrong.
type errorsSeen struct {
	Target
	mu   sync.Mutex
	msgs []string
}

func (e *errorsSeen) Do(ctx context.Context, r Request) Response {
	resp := e.Target.Do(ctx, r)
	if resp.Err != nil {
		e.mu.Lock()
		if len(e.msgs) < 5 {
			e.msgs = append(e.msgs, resp.Err.Error())
		}
		e.mu.Unlock()
	}
	return resp
}

func (e *errorsSeen) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprint(e.msgs)
}
