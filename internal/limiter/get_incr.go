package limiter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/hotpath"
)

func init() {
	register(design.RedisGetIncr, func(cfg Config, client redis.UniversalClient, _ Clock) (Limiter, error) {
		return newGetIncr(cfg, client), nil
	})
}

// getIncr is the design that races on purpose: GET (with PTTL, pipelined,
// so the answer can carry an honest reset), compare in the gateway, then
// INCRBY and, on the first increment, PEXPIRE — separate round trips with a
// gap between the read and the write where another gateway reads the same
// count.
//
// On a single server the round trips go through a hotpath.Pool, as the Lua
// designs' do, so every design is measured through the same client; a
// Cluster keeps go-redis.
type getIncr struct {
	client redis.UniversalClient
	pool   *hotpath.Pool
	prefix string
	limit  int64
	window time.Duration
	pause  time.Duration
}

func newGetIncr(cfg Config, client redis.UniversalClient) *getIncr {
	g := &getIncr{
		client: client, prefix: keyHead(cfg),
		limit: cfg.Limit.Count, window: cfg.Limit.Window, pause: cfg.Pause,
	}
	g.pool = hotpath.ForClient(client)
	return g
}

// Close closes the pool, when there is one; the client is the caller's.
func (g *getIncr) Close() error {
	if g.pool != nil {
		return g.pool.Close()
	}
	return nil
}

// Warm opens conns connections for decisions.
func (g *getIncr) Warm(ctx context.Context, conns int) error {
	return warm(ctx, g.pool, g.client, conns)
}

// Allow implements Limiter.
func (g *getIncr) Allow(ctx context.Context, id string, cost int64) (Decision, error) {
	key := g.prefix + id + "}"
	n, ttl, err := g.read(ctx, key)
	if err != nil {
		return Decision{}, fmt.Errorf("redis-get-incr read %q: %w", id, err)
	}
	if ttl < 0 {
		ttl = g.window
	}
	if n+cost > g.limit {
		// The key outlives its PTTL by up to 1 ms: Retry-After is never early.
		return Decision{Remaining: max(0, g.limit-n), RetryAfter: ttl + time.Millisecond, Reset: ttl, By: decision.ByRedis}, nil
	}
	if g.pause > 0 {
		t := time.NewTimer(g.pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return Decision{}, fmt.Errorf("redis-get-incr pause for %q: %w", id, ctx.Err())
		case <-t.C:
		}
	}
	after, err := g.incr(ctx, key, cost)
	if err != nil {
		return Decision{}, fmt.Errorf("redis-get-incr increment %q: %w", id, err)
	}
	if after == cost {
		// first increment of the window: a third round trip sets the expiry
		if err := g.expire(ctx, key); err != nil {
			return Decision{}, fmt.Errorf("redis-get-incr expire %q: %w", id, err)
		}
		ttl = g.window
	}
	return Decision{Allowed: true, Remaining: max(0, g.limit-after), Reset: ttl, By: decision.ByRedis}, nil
}

// read is GET and PTTL in one round trip: the count (0 when the key is
// missing) and the TTL (negative when there is none).
func (g *getIncr) read(ctx context.Context, key string) (n int64, ttl time.Duration, err error) {
	if g.pool == nil {
		pipe := g.client.Pipeline()
		get := pipe.Get(ctx, key)
		pttl := pipe.PTTL(ctx, key)
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return 0, 0, err
		}
		if n, err = get.Int64(); err != nil && !errors.Is(err, redis.Nil) {
			return 0, 0, err
		}
		return n, pttl.Val(), nil
	}
	r, err := g.pool.Do(ctx, time.Time{}, []string{"GET", key}, []string{"PTTL", key})
	if err != nil {
		return 0, 0, err
	}
	switch v := r[0].(type) {
	case nil:
	case string:
		if n, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, 0, err
		}
	case error:
		return 0, 0, v
	default:
		return 0, 0, fmt.Errorf("GET answered %T", v)
	}
	ms, ok := r[1].(int64)
	if !ok {
		return 0, 0, fmt.Errorf("PTTL answered %v", r[1])
	}
	if ms < 0 {
		return n, time.Duration(ms), nil // -1 no TTL, -2 no key, as go-redis keeps them
	}
	return n, time.Duration(ms) * time.Millisecond, nil
}

// incr is INCRBY: the count after it.
func (g *getIncr) incr(ctx context.Context, key string, cost int64) (int64, error) {
	if g.pool == nil {
		return g.client.IncrBy(ctx, key, cost).Result()
	}
	r, err := g.pool.Do(ctx, time.Time{}, []string{"INCRBY", key, strconv.FormatInt(cost, 10)})
	if err != nil {
		return 0, err
	}
	after, ok := r[0].(int64)
	if !ok {
		return 0, fmt.Errorf("INCRBY answered %v", r[0])
	}
	return after, nil
}

// expire is PEXPIRE for one window.
func (g *getIncr) expire(ctx context.Context, key string) error {
	if g.pool == nil {
		return g.client.PExpire(ctx, key, g.window).Err()
	}
	r, err := g.pool.Do(ctx, time.Time{}, []string{"PEXPIRE", key, strconv.FormatInt(g.window.Milliseconds(), 10)})
	if err != nil {
		return err
	}
	if e, ok := r[0].(error); ok {
		return e
	}
	return nil
}
