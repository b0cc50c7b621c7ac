package limiter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/hotpath"
	"github.com/rlctl/rlctl/internal/redisconn"
)

// scriptLimiter runs one of the Lua designs: one EVALSHA per decision, one
// round trip, atomic on the server.
//
// On a single server (standalone, or a Sentinel-resolved primary) the
// decision goes through a hotpath.Pool that mirrors the client's options:
// go-redis's per-call cost would otherwise take the CPU the server under
// test needs (see package hotpath). A Cluster keeps go-redis for its slot
// routing.
type scriptLimiter struct {
	algo       string
	script     luaScript
	client     redis.UniversalClient
	pool       *hotpath.Pool
	clock      Clock
	readsClock bool // the script takes now after cost (design.Clock.Reads)
	redisClock bool
	prefix     string // "<prefix><tag>:{"
	// fixed holds the ARGV that precede cost, built once at New.
	fixed hotpath.Args
	// member makes sliding-log entries unique: a random nonce per limiter
	// plus a counter.
	nonce string
	seq   atomic.Uint64
	// replicas, when > 0, is how many replicas must acknowledge an
	// admission's write within waitFor (Config.Replicate).
	replicas int
	waitFor  time.Duration
}

// luaDesign is what a Lua design's file declares: its script, the ARGV
// its script takes before cost, and whether each call appends a unique
// member (the sliding log's entries).
type luaDesign struct {
	script luaScript
	fixed  func(cfg Config, a *hotpath.Args)
	member bool
}

// scriptDesigns are the designs decided by one script per request, the ones
// that can wait for replicas.
var scriptDesigns = map[string]luaDesign{}

// registerLua registers a Lua design's constructor under name.
func registerLua(name string, d luaDesign) {
	scriptDesigns[name] = d
	register(name, func(cfg Config, client redis.UniversalClient, clock Clock) (Limiter, error) {
		return newScriptLimiter(cfg, client, clock)
	})
}

// limitAndWindow is the ARGV most scripts take before cost: the limit's
// count and its window in ms.
func limitAndWindow(cfg Config, a *hotpath.Args) {
	a.Int(cfg.Limit.Count)
	a.Int(cfg.Limit.Window.Milliseconds())
}

func newScriptLimiter(cfg Config, client redis.UniversalClient, clock Clock) (*scriptLimiter, error) {
	d, ok := scriptDesigns[cfg.Algorithm]
	if !ok {
		return nil, fmt.Errorf("%s is not a Lua design", cfg.Algorithm)
	}
	s := &scriptLimiter{
		algo:       cfg.Algorithm,
		script:     d.script,
		client:     client,
		clock:      clock,
		readsClock: design.MustLookup(cfg.Algorithm).Clock.Reads(),
		redisClock: cfg.EffectiveClock() == ClockRedis,
		prefix:     keyHead(cfg),
		replicas:   cfg.Replicate,
		waitFor:    cfg.replicateTimeout(),
	}
	if d.member {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("%s nonce: %w", cfg.Algorithm, err)
		}
		s.nonce = hex.EncodeToString(b[:]) + "-"
	}
	d.fixed(cfg, &s.fixed)
	s.pool = hotpath.ForClient(client)
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
	if err := s.script.redis.Load(ctx, s.client).Err(); err != nil {
		return fmt.Errorf("%s: load script: %w", s.algo, err)
	}
	return warm(ctx, s.pool, s.client, conns)
}

// warm opens conns connections where a Redis design's calls go: its hotpath
// pool on a single server, else the go-redis client's (a Cluster's, on
// every primary).
func warm(ctx context.Context, pool *hotpath.Pool, client redis.UniversalClient, conns int) error {
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
		return s.allowPool(ctx, id, cost, time.Time{})
	}
	if s.replicas > 0 {
		return s.allowWait(ctx, id, cost)
	}
	var a hotpath.Args
	s.args(&a, id, cost)
	keys, argv := a.Values()
	r, err := s.script.redis.Run(ctx, s.client, keys, argv...).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("%s script for %q: %w", s.algo, id, err)
	}
	return scriptDecision(r)
}

// args builds one decision's key and arguments, the same for both clients.
func (s *scriptLimiter) args(a *hotpath.Args, id string, cost int64) {
	a.Key(s.key(id))
	a.Add(&s.fixed)
	a.Int(cost)
	if s.readsClock {
		// (a window that is a key's TTL needs no clock)
		if s.redisClock {
			a.String("")
		} else {
			a.Int(s.clock().UnixMicro())
		}
	}
	if s.nonce != "" {
		a.String(s.nonce + strconv.FormatUint(s.seq.Add(1), 36))
	}
}

// allowBy is Allow with a deadline besides ctx's.
func (s *scriptLimiter) allowBy(ctx context.Context, id string, cost int64, deadline time.Time) (Decision, error) {
	if s.pool != nil {
		return s.allowPool(ctx, id, cost, deadline)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return s.Allow(ctx, id, cost)
}

// allowPool is Allow through the hotpath pool. A zero deadline means ctx's
// alone.
func (s *scriptLimiter) allowPool(ctx context.Context, id string, cost int64, deadline time.Time) (Decision, error) {
	if s.replicas > 0 {
		return s.allowPoolWait(ctx, id, cost, deadline)
	}
	var a hotpath.Args
	s.args(&a, id, cost)
	var buf [5]int64
	r, err := s.pool.EvalIntsUntil(ctx, deadline, s.script.hot, &a, buf[:0])
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
