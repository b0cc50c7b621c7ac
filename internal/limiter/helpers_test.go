package limiter

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redistest"
)

// epoch is a fake "now" aligned to every window the tests use, far from
// zero so the float arithmetic in the scripts sees realistic magnitudes.
var epoch = time.UnixMilli(1_764_000_000_000)

// fakeClock is a gateway clock the test moves by hand.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Add(d time.Duration) { c.ns.Add(int64(d)) }
func (c *fakeClock) Clock() Clock        { return c.Now }
func (c *fakeClock) Skewed(d time.Duration) Clock {
	return func() time.Time { return c.Now().Add(d) }
}

// backend is a Redis the tests run against, with a way to let its
// expiry clock move along with a fake gateway clock where that is possible.
type backend struct {
	name   string
	client *redis.Client
	mini   *miniredis.Miniredis // nil for a real redis-server
	server *redistest.Server
}

// advance moves miniredis' TTLs (and TIME) with the fake clock; a real
// server's TTLs run in real time and cannot follow.
func (b backend) advance(c *fakeClock, d time.Duration) {
	c.Add(d)
	if b.mini != nil {
		b.mini.FastForward(d)
		b.mini.SetTime(c.Now())
	}
}

func realBackend(t testing.TB) backend {
	s := redistest.Start(t)
	return backend{name: "redis-server", client: s.Client(t), server: s}
}

func miniBackend(t testing.TB, now time.Time) backend {
	m := miniredis.RunT(t)
	m.SetTime(now)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	return backend{name: "miniredis", client: c, mini: m}
}

func mustNew(t testing.TB, cfg Config, c redis.UniversalClient, clock Clock) Limiter {
	t.Helper()
	if c == nil && !IsLocal(cfg.Algorithm) {
		t.Fatalf("%s needs a client", cfg.Algorithm)
	}
	var l Limiter
	var err error
	if c == nil {
		l, err = New(cfg, nil, clock)
	} else {
		l, err = New(cfg, c, clock)
	}
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	if c, ok := l.(interface{ Close() error }); ok {
		t.Cleanup(func() { c.Close() })
	}
	return l
}

// held counts the identities in sharded state.
func held[V any](mu *[shards]sync.Mutex, state *[shards]map[string]V) int {
	n := 0
	for i := range state {
		mu[i].Lock()
		n += len(state[i])
		mu[i].Unlock()
	}
	return n
}

func (f *localFixedWindow) size() int { return held(&f.mu, &f.state) }
func (b *localTokenBucket) size() int { return held(&b.mu, &b.state) }
func (l *Lease) slices() int          { return held(&l.mu, &l.state) }
