package limiter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/resp"
)

// scriptLimiter runs one of the Lua designs: one EVALSHA per decision, one
// round trip, atomic on the server.
//
// On a single server (standalone, or a Sentinel-resolved primary) the
// decision goes through a resp.Pool that mirrors the client's options:
// go-redis's per-call cost would otherwise take the CPU the server under
// test needs (see package resp). A Cluster keeps go-redis for its slot
// routing.
type scriptLimiter struct {
	algo       string
	script     *redis.Script
	client     redis.UniversalClient
	pool       *resp.Pool
	rscript    *resp.Script
	clock      Clock
	redisClock bool
	prefix     string // "<prefix><tag>:{"
	// fixed holds the ARGV that precede cost, built once at New.
	fixed resp.Args
	// member makes sliding-log entries unique: a random nonce per limiter
	// plus a counter.
	nonce string
	seq   atomic.Uint64
	// replicas, when > 0, is how many replicas must acknowledge an
	// admission's write within waitFor (Config.Replicate).
	replicas int
	waitFor  time.Duration
}

func newScriptLimiter(cfg Config, client redis.UniversalClient, clock Clock) (*scriptLimiter, error) {
	s := &scriptLimiter{
		algo:       cfg.Algorithm,
		client:     client,
		clock:      clock,
		redisClock: cfg.EffectiveClock() == ClockRedis,
		prefix:     prefixOf(cfg) + tags[cfg.Algorithm] + ":{",
		replicas:   cfg.Replicate,
		waitFor:    cfg.replicateTimeout(),
	}
	switch cfg.Algorithm {
	case RedisFixedWindow:
		s.script = fixedWindowScript
	case RedisFixedWindowRefresh:
		s.script = fixedWindowRefreshScript
	case RedisClockWindow:
		s.script = clockWindowScript
	case RedisTokenBucket:
		s.script = tokenBucketScript
	case RedisSlidingWindow:
		s.script = slidingWindowScript
	case RedisSlidingLog:
		s.script = slidingLogScript
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("sliding log nonce: %w", err)
		}
		s.nonce = hex.EncodeToString(b[:]) + "-"
	case RedisGCRA:
		s.script = gcraScript
	default:
		return nil, fmt.Errorf("%s is not a Lua design", cfg.Algorithm)
	}
	limit := cfg.Limit.Count
	wms := cfg.Limit.Window.Milliseconds()
	switch cfg.Algorithm {
	case RedisTokenBucket:
		s.fixed.Int(capacityOf(cfg))
		s.fixed.String(strconv.FormatFloat(float64(limit)/float64(wms), 'g', -1, 64))
	case RedisGCRA:
		s.fixed.Int(capacityOf(cfg))
		s.fixed.Int(limit)
		s.fixed.Int(wms)
	default:
		s.fixed.Int(limit)
		s.fixed.Int(wms)
	}
	if s.pool = resp.ForClient(client); s.pool != nil {
		s.rscript = respScripts[cfg.Algorithm]
	}
	return s, nil
}

// Close closes the decision pool, when there is one. The go-redis client
// is the caller's to close.
func (s *scriptLimiter) Close() error {
	if s.pool != nil {
		return s.pool.Close()
	}
	return nil
}

// Warm loads the script and opens conns connections for decisions, so the
// first ones pay neither a dial nor a NOSCRIPT round trip.
func (s *scriptLimiter) Warm(ctx context.Context, conns int) error {
	if err := s.script.Load(ctx, s.client).Err(); err != nil {
		return fmt.Errorf("%s: load script: %w", s.algo, err)
	}
	return warm(ctx, s.pool, s.client, conns)
}

// warm opens conns connections where a Redis design's calls go: its resp
// pool on a single server, else the go-redis client's (a Cluster's, on
// every primary).
func warm(ctx context.Context, pool *resp.Pool, client redis.UniversalClient, conns int) error {
	if pool != nil {
		return pool.Warm(ctx, conns)
	}
	return redisconn.Warm(ctx, client, conns)
}

func (s *scriptLimiter) key(id string) string {
	b := make([]byte, 0, len(s.prefix)+len(id)+1)
	b = append(b, s.prefix...)
	b = append(b, id...)
	b = append(b, '}')
	return string(b)
}

// Allow implements Limiter.
func (s *scriptLimiter) Allow(ctx context.Context, id string, cost int64) (Decision, error) {
	if s.pool != nil {
		return s.allowResp(ctx, id, cost, time.Time{})
	}
	if s.replicas > 0 {
		return s.allowWait(ctx, id, cost)
	}
	var a resp.Args
	s.args(&a, id, cost)
	keys, argv := a.Values()
	r, err := s.script.Run(ctx, s.client, keys, argv...).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("%s script for %q: %w", s.algo, id, err)
	}
	return scriptDecision(r)
}

// args builds one decision's key and arguments, the same for both clients.
func (s *scriptLimiter) args(a *resp.Args, id string, cost int64) {
	a.Key(s.key(id))
	a.Add(&s.fixed)
	a.Int(cost)
	switch s.algo {
	case RedisFixedWindow, RedisFixedWindowRefresh:
		// no clock: the window is the key's TTL
	default:
		if s.redisClock {
			a.String("")
		} else {
			a.Int(s.clock().UnixMicro())
		}
	}
	if s.algo == RedisSlidingLog {
		a.String(s.nonce + strconv.FormatUint(s.seq.Add(1), 36))
	}
}

// allowBy is Allow with a deadline besides ctx's.
func (s *scriptLimiter) allowBy(ctx context.Context, id string, cost int64, deadline time.Time) (Decision, error) {
	if s.pool != nil {
		return s.allowResp(ctx, id, cost, deadline)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return s.Allow(ctx, id, cost)
}

// allowResp is Allow through the resp pool. A zero deadline means ctx's
// alone.
func (s *scriptLimiter) allowResp(ctx context.Context, id string, cost int64, deadline time.Time) (Decision, error) {
	if s.replicas > 0 {
		return s.allowRespWait(ctx, id, cost, deadline)
	}
	var a resp.Args
	s.args(&a, id, cost)
	var buf [5]int64
	r, err := s.pool.EvalIntsUntil(ctx, deadline, s.rscript, &a, buf[:0])
	if err != nil {
		return Decision{}, fmt.Errorf("%s script for %q: %w", s.algo, id, err)
	}
	return scriptDecision(r)
}

// scriptDecision reads the reply every script returns:
// {allowed, remaining, retry_ms, reset_ms, server_us (-1 = gateway clock)}.
func scriptDecision(r []int64) (Decision, error) {
	if len(r) != 5 {
		return Decision{}, fmt.Errorf("script reply has %d values, want 5", len(r))
	}
	d := Decision{
		Allowed:    r[0] > 0,
		Remaining:  r[1],
		RetryAfter: time.Duration(r[2]) * time.Millisecond,
		Reset:      time.Duration(r[3]) * time.Millisecond,
		By:         decision.ByRedis,
	}
	if d.Allowed {
		d.RetryAfter = 0
	}
	if r[4] >= 0 {
		d.ServerTime = time.UnixMicro(r[4])
	}
	return d, nil
}

// getIncr is the design that races on purpose: GET (with PTTL, pipelined,
// so the answer can carry an honest reset), compare in the gateway, then
// INCRBY and, on the first increment, PEXPIRE — separate round trips with a
// gap between the read and the write where another gateway reads the same
// count.
//
// On a single server the round trips go through a resp.Pool, as the Lua
// designs' do, so every design is measured through the same client; a
// Cluster keeps go-redis.
type getIncr struct {
	client redis.UniversalClient
	pool   *resp.Pool
	prefix string
	limit  int64
	window time.Duration
	pause  time.Duration
}

func newGetIncr(cfg Config, client redis.UniversalClient) *getIncr {
	g := &getIncr{
		client: client, prefix: prefixOf(cfg) + tags[RedisGetIncr] + ":{",
		limit: cfg.Limit.Count, window: cfg.Limit.Window, pause: cfg.Pause,
	}
	g.pool = resp.ForClient(client)
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
