package redisconn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// embeddedTick is how often the embedded server's clock and expiry follow
// the real clock. A key's expiry is late by at most this much.
const embeddedTick = 2 * time.Millisecond

// Embedded is an in-process Redis (miniredis) on a loopback port: the
// zero-install default for rlctl verify.
//
// miniredis on its own never expires a key (it waits for FastForward) and
// its TIME answers a fixed instant (it moves only with SetTime), so every
// window-based limiter would silently stop rolling. Embedded therefore runs
// a goroutine that, every few milliseconds, sets miniredis's time to now and
// fast-forwards its TTLs by the real time elapsed.
type Embedded struct {
	m *miniredis.Miniredis
	// addr is kept because miniredis panics on Addr after Close.
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// StartEmbedded starts the embedded server. It stops when ctx is cancelled
// or Close is called.
func StartEmbedded(ctx context.Context) (*Embedded, error) {
	m := miniredis.NewMiniRedis()
	m.SetTime(time.Now())
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	e := &Embedded{m: m, addr: m.Addr(), cancel: cancel, done: make(chan struct{})}
	go e.followClock(ctx)
	return e, nil
}

func (e *Embedded) followClock(ctx context.Context) {
	defer close(e.done)
	tick := time.NewTicker(embeddedTick)
	defer tick.Stop()
	// Monotonic readings, so a wall-clock jump neither freezes nor
	// mass-expires keys; TIME still reports the wall clock.
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			e.m.Close()
			return
		case now := <-tick.C:
			e.m.SetTime(now)
			if d := now.Sub(last); d > 0 {
				e.m.FastForward(d)
			}
			last = now
		}
	}
}

// Addr is the server's host:port on 127.0.0.1.
func (e *Embedded) Addr() string { return e.addr }

// URL is redis://Addr.
func (e *Embedded) URL() string { return "redis://" + e.addr }

// Close stops the server and its clock. It is safe to call more than once.
func (e *Embedded) Close() error {
	e.once.Do(func() {
		e.cancel()
		<-e.done
	})
	return nil
}
