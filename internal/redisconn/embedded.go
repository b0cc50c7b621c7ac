package redisconn

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// embeddedStep is the finest step the embedded server's clock and expiry
// move in: before a command runs, they catch up with the real clock if it
// is at least this far ahead.
const embeddedStep = time.Millisecond

// A catch-up walks every key with a TTL (miniredis keeps TTLs as
// durations), so with thousands of identities catching up every
// millisecond would take the CPU the traffic needs. The step therefore
// grows to ten times what a walk costs, so catching up takes at most about
// a tenth of the time, up to embeddedMaxStep; expiry is then early by at
// most that step instead of one millisecond. A key whose TTL ran out is
// still gone on time for a command that names it (expireNamed).
//
// What a walk costs is the least of the last embeddedCostSamples: a walk
// that waited for a running command or lost the CPU says nothing about the
// keyspace, and a step raised by it lets a key outlive the PTTL it
// announced by up to the step (a fixed window's Retry-After is that PTTL:
// clients told to come back then were denied, under load, as if the
// limiter's hint were early).
const (
	embeddedCostFactor  = 10
	embeddedMaxStep     = 50 * time.Millisecond
	embeddedCostSamples = 8
)

// embeddedIdleTick moves the clock while no command arrives, so memory is
// freed on time; expiry as commands see it never depends on it.
const embeddedIdleTick = 20 * time.Millisecond

// Embedded is an in-process Redis (miniredis) on a loopback port: the
// zero-install default for rlctl verify.
//
// miniredis on its own never expires a key (it waits for FastForward) and
// its TIME answers a fixed instant (it moves only with SetTime), so every
// window-based limiter would silently stop rolling. Embedded therefore
// catches miniredis's clock and TTLs up with real time before every command
// (a server pre-hook), and every few milliseconds while idle.
//
// Why before every command and not only on a ticker: FastForward subtracts
// the time since the last catch-up from every TTL, including one set a
// moment ago, so a key expires early by up to the gap between catch-ups.
// A ticker starved by a busy CPU (the traffic engine shares it) makes that
// gap tens of milliseconds, and fixed windows then roll early and admit
// more than they should — a fault of the instrument, not of the limiter.
// Catching up before each command bounds it by the step, 1ms for small
// keyspaces (see embeddedCostFactor for large ones).
type Embedded struct {
	m *miniredis.Miniredis
	// addr is kept because miniredis panics on Addr after Close.
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	last  time.Time     // monotonic reading of the last catch-up
	step  time.Duration // the current catch-up step (see embeddedCostFactor)
	costs [embeddedCostSamples]time.Duration
	next  int // where the next cost sample goes in costs

	clients sync.Map // *server.Peer of every client connection → struct{}
}

// clientCommand reports whether c is a client connection rather than a
// redis.call from inside a Lua script. The hook also runs for those, while
// the script's EVAL holds miniredis's lock, so catching up there would
// deadlock (and is not needed: the EVAL caught up before it started). A
// connection's peer has no context before its first command; a script's
// call gets a fresh peer carrying its caller's context.
func (e *Embedded) clientCommand(c *server.Peer) bool {
	if _, ok := e.clients.Load(c); ok {
		return true
	}
	if c.Ctx != nil {
		return false
	}
	e.clients.Store(c, struct{}{})
	c.OnDisconnect(func() { e.clients.Delete(c) })
	return true
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
	e := &Embedded{m: m, addr: m.Addr(), cancel: cancel, done: make(chan struct{}), last: time.Now()}
	m.Server().SetPreHook(func(c *server.Peer, cmd string, args ...string) bool {
		if e.clientCommand(c) {
			e.beforeCommand(time.Now(), cmd, args)
		}
		return false // the command runs as usual
	})
	go e.followClock(ctx)
	return e, nil
}

// catchUp moves miniredis's TIME to now and its TTLs forward by the real
// time since the last catch-up. Readings are monotonic, so a wall-clock
// jump neither freezes nor mass-expires keys; TIME still reports the wall
// clock.
func (e *Embedded) catchUp(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUpLocked(now)
}

// beforeCommand catches up, when a step is due, and expires the keys cmd
// names, under one hold of e.mu: a catch-up between the two would move
// the TTLs' base.
func (e *Embedded) beforeCommand(now time.Time, cmd string, args []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUpLocked(now)
	e.expireNamed(now, cmd, args)
}

// catchUpLocked is catchUp; the caller holds e.mu.
func (e *Embedded) catchUpLocked(now time.Time) {
	d := now.Sub(e.last)
	if d < max(e.step, embeddedStep) {
		return
	}
	start := time.Now() // not now: the wait for e.mu is no walk's cost
	e.m.SetTime(now)
	e.m.FastForward(d)
	e.last = now
	e.recordCost(time.Since(start))
}

// expireNamed deletes each key cmd names whose TTL ran out by now but
// that the last catch-up, up to a step ago, left: a client told a window's
// PTTL that comes back exactly then must find it rolled, whatever the step
// (a key that outlives its PTTL reads as the limiter's early Retry-After).
// miniredis keeps a TTL relative to the last catch-up, so the key's
// deadline is that catch-up plus its TTL. Only database 0, the one rlctl
// and limiters' scripts use, is looked at; a non-key argument costs one
// lookup of a key that is not there. The caller holds e.mu.
func (e *Embedded) expireNamed(now time.Time, cmd string, args []string) {
	since := now.Sub(e.last)
	if since <= 0 {
		return
	}
	db := e.m.DB(0)
	for _, k := range namedKeys(cmd, args) {
		if ttl := db.TTL(k); ttl > 0 && ttl <= since {
			db.Del(k)
		}
	}
}

// namedKeys returns the keys cmd names: a script's declared KEYS, every
// argument of the commands that take only keys, and otherwise the first
// argument, where Redis commands put their key.
func namedKeys(cmd string, args []string) []string {
	switch cmd {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
		if len(args) < 2 {
			return nil
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 || n > len(args)-2 {
			return nil
		}
		return args[2 : 2+n]
	case "DEL", "UNLINK", "EXISTS", "MGET", "TOUCH", "WATCH":
		return args
	case "PING", "ECHO", "TIME", "MULTI", "EXEC", "DISCARD", "UNWATCH", "HELLO", "AUTH", "SELECT",
		"CLIENT", "INFO", "CONFIG", "COMMAND", "SCRIPT", "FUNCTION", "SCAN", "KEYS", "DBSIZE", "QUIT":
		return nil
	}
	return args[:min(len(args), 1)]
}

// recordCost adds one catch-up's cost and sets the step from the least of
// the recent ones. The caller holds e.mu.
func (e *Embedded) recordCost(c time.Duration) {
	e.costs[e.next] = c
	e.next = (e.next + 1) % len(e.costs)
	least := slices.Min(e.costs[:])
	e.step = min(embeddedCostFactor*least, embeddedMaxStep)
}

// currentStep is how early a key may expire now, for tests.
func (e *Embedded) currentStep() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return max(e.step, embeddedStep)
}

func (e *Embedded) followClock(ctx context.Context) {
	defer close(e.done)
	tick := time.NewTicker(embeddedIdleTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			e.m.Close()
			return
		case <-tick.C:
			e.catchUp(time.Now())
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
