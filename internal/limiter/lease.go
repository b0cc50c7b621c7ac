package limiter

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/hotpath"
)

// leaseScript grants a slice of a window's budget; its ARGV are limit,
// window_ms, want, now_us.
//
//go:embed lua/lease.lua
var leaseLua string

var leaseScript = newScript(design.Leasing, leaseLua)

func init() {
	register(design.Leasing, func(cfg Config, client redis.UniversalClient, clock Clock) (Limiter, error) {
		return newLease(cfg, client, clock), nil
	})
}

// Lease is the leasing design on one gateway. Redis holds a global budget
// per identity and window (Limit.Count per Limit.Window); the gateway takes
// it in slices with an atomic script and spends its slice in memory, so a
// request that finds budget left never waits on the network. When a slice
// falls below RefillBelow of its size a background top-up (at most one per
// identity in flight, bounded by LeaseConfig.Timeout) asks for the next one.
//
// A request that finds nothing left asks Redis itself: a grant lets it
// through (By=lease); a refused grant denies it (By=redis) and the gateway
// remembers the window is spent, denying locally (By=lease) until the
// window ends without asking again.
//
// A slice lives until the end of the window it was granted in (as the
// grant reported it). Left-over budget from a top-up that straddles a
// window boundary is kept, so one window can see up to Limit.Count plus one
// slice per gateway: that is the bound the design promises, not Limit.Count.
//
// Slice size: Lease.Size, default max(1, Limit.Count/10). Adaptive sizes
// each top-up by recent demand: the rate spent since the previous grant
// times a tenth of the window, between 1 and Limit.Count.
type Lease struct {
	client redis.UniversalClient
	// pool carries the grants on a single server, as the other designs'
	// decisions (see scriptLimiter); nil on a Cluster, which keeps go-redis.
	pool        *hotpath.Pool
	clock       Clock
	redisClock  bool
	prefix      string
	limit       int64
	wms         int64
	size        int64
	refillBelow float64
	adaptive    bool
	timeout     time.Duration
	window      time.Duration

	mu    [shards]sync.Mutex
	state [shards]map[string]*slice
	// nextSweep is, per shard, when to drop slices that ended (as the
	// local designs do; see local.go).
	nextSweep [shards]time.Time

	wg     sync.WaitGroup
	closed atomic.Bool
	dead   atomic.Bool

	granted, spent, expired, stranded, topUpErrors atomic.Int64
}

type slice struct {
	left      int64
	size      int64     // the size last asked for; the refill threshold scales with it
	expires   time.Time // end of the window the budget was granted in
	spentOut  time.Time // the window's budget is gone until then
	inflight  bool
	lastGrant time.Time
	spentSinc int64 // spent since lastGrant, for adaptive sizing
	lastUse   time.Time
}

// LeaseStats counts budget, all in request units.
type LeaseStats struct {
	Granted  int64 // taken from Redis
	Spent    int64 // admitted from slices
	Expired  int64 // left in slices when their window ended
	Held     int64 // in live slices now (a killed gateway's are stranded instead)
	Stranded int64 // held by this gateway when it was killed
	// TopUpErrors counts background top-ups that failed.
	TopUpErrors int64
}

// Unspent is budget granted but never admitted: expired, held or stranded.
func (s LeaseStats) Unspent() int64 { return s.Granted - s.Spent }

func newLease(cfg Config, client redis.UniversalClient, clock Clock) *Lease {
	l := &Lease{
		client:      client,
		clock:       clock,
		redisClock:  cfg.EffectiveClock() == ClockRedis,
		prefix:      keyHead(cfg),
		limit:       cfg.Limit.Count,
		wms:         cfg.Limit.Window.Milliseconds(),
		window:      cfg.Limit.Window,
		size:        cfg.Lease.Size,
		refillBelow: cfg.Lease.RefillBelow,
		adaptive:    cfg.Lease.Adaptive,
		timeout:     cfg.Lease.Timeout,
	}
	if l.size <= 0 {
		l.size = DefaultLeaseSize(cfg.Limit.Count)
	}
	if l.refillBelow == 0 {
		l.refillBelow = design.DefaultRefillBelow
	}
	if l.timeout <= 0 {
		l.timeout = time.Second
	}
	for i := range l.state {
		l.state[i] = make(map[string]*slice)
	}
	l.pool = hotpath.ForClient(client)
	return l
}

// DefaultLeaseSize is the fixed slice size when none is set (see package
// design).
func DefaultLeaseSize(limit int64) int64 { return design.DefaultLeaseSize(limit) }

// Allow implements Limiter.
func (l *Lease) Allow(ctx context.Context, id string, cost int64) (Decision, error) {
	if d, ok := l.allowLocal(id, cost); ok {
		return d, nil
	}
	return l.allowRemote(ctx, id, cost)
}

// allowLocal decides from memory when it can: budget left in the slice, or
// a window Redis already said is spent. ok is false when only Redis can
// answer.
func (l *Lease) allowLocal(id string, cost int64) (d Decision, ok bool) {
	now := l.clock()
	i := shardOf(id)
	l.mu[i].Lock()
	defer l.mu[i].Unlock()
	if !now.Before(l.nextSweep[i]) {
		l.sweep(i, now)
	}
	s := l.slice(i, id)
	s.lastUse = now
	l.expire(s, now)
	if s.left >= cost {
		return l.spend(s, id, cost, now), true
	}
	if now.Before(s.spentOut) {
		wait := s.spentOut.Sub(now)
		return Decision{RetryAfter: wait, Reset: wait, By: decision.ByLease}, true
	}
	return Decision{}, false
}

// allowRemote asks Redis for a slice for a request that found nothing
// left to spend.
func (l *Lease) allowRemote(ctx context.Context, id string, cost int64) (Decision, error) {
	i := shardOf(id)
	l.mu[i].Lock()
	want := l.want(l.slice(i, id), l.clock())
	l.mu[i].Unlock()

	g, err := l.grant(ctx, id, want)
	if err != nil {
		return Decision{}, err
	}
	now := l.clock()
	l.mu[i].Lock()
	defer l.mu[i].Unlock()
	// Looked up again: a sweep may have dropped the slice meanwhile, and
	// the grant must land in the one the identity uses now.
	s := l.slice(i, id)
	l.take(s, g, want, now)
	if s.left >= cost {
		d := l.spend(s, id, cost, now)
		d.ServerTime = g.server
		return d, nil
	}
	return Decision{RetryAfter: g.windowLeft, Reset: g.windowLeft, By: decision.ByRedis, ServerTime: g.server}, nil
}

// slice returns id's slice in shard i, creating it. Caller holds the lock.
func (l *Lease) slice(i int, id string) *slice {
	s := l.state[i][id]
	if s == nil {
		s = &slice{size: l.size}
		l.state[i][id] = s
	}
	return s
}

// sweep drops shard i's slices of identities idle for a whole window that
// hold nothing and know nothing a new one would not: their window ended,
// Redis's "spent" answer expired, and no top-up is in flight (it holds
// the slice). Adaptive sizing then starts afresh for a returning
// identity: its demand from before an idle window is stale. It runs at
// most once per window. Caller holds the lock.
func (l *Lease) sweep(i int, now time.Time) {
	for k, s := range l.state[i] {
		l.expire(s, now)
		if s.left == 0 && !s.inflight && now.Sub(s.lastUse) >= l.window &&
			!now.Before(s.spentOut) && !now.Before(s.expires) {
			delete(l.state[i], k)
		}
	}
	l.nextSweep[i] = now.Add(l.window)
}

// expire drops a slice whose window has ended. Caller holds the lock.
func (l *Lease) expire(s *slice, now time.Time) {
	if s.left > 0 && !s.expires.IsZero() && !now.Before(s.expires) {
		l.expired.Add(s.left)
		s.left = 0
	}
}

// spend admits cost from the slice and starts a top-up when it runs low.
// Caller holds the lock.
func (l *Lease) spend(s *slice, id string, cost int64, now time.Time) Decision {
	s.left -= cost
	s.spentSinc += cost
	l.spent.Add(cost)
	if float64(s.left) < l.refillBelow*float64(s.size) && !s.inflight && !now.Before(s.spentOut) && !l.closed.Load() && !l.dead.Load() {
		s.inflight = true
		want := l.want(s, now)
		l.wg.Add(1)
		go l.topUp(id, s, want)
	}
	return Decision{Allowed: true, Remaining: s.left, Reset: max(0, s.expires.Sub(now)), By: decision.ByLease}
}

// want is the size of the next slice. Caller holds the lock.
func (l *Lease) want(s *slice, now time.Time) int64 {
	if !l.adaptive || s.lastGrant.IsZero() {
		return l.size
	}
	el := now.Sub(s.lastGrant)
	if el <= 0 {
		return min(l.limit, s.size*2)
	}
	perWindow := float64(s.spentSinc) / float64(el) * float64(l.window)
	w := int64(math.Ceil(perWindow / 10))
	return min(l.limit, max(1, w))
}

// take adds a grant to the slice. Caller holds the lock.
func (l *Lease) take(s *slice, g grant, want int64, now time.Time) {
	if l.dead.Load() {
		// a grant that lands after the gateway died is stranded with it
		l.stranded.Add(g.n)
		l.granted.Add(g.n)
		return
	}
	l.granted.Add(g.n)
	s.left += g.n
	s.size = want
	s.expires = now.Add(g.windowLeft)
	s.lastGrant, s.spentSinc = now, 0
	if g.n < want {
		s.spentOut = now.Add(g.windowLeft)
	}
}

func (l *Lease) topUp(id string, s *slice, want int64) {
	defer l.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	g, err := l.grant(ctx, id, want)
	cancel()
	i := shardOf(id)
	l.mu[i].Lock()
	defer l.mu[i].Unlock()
	s.inflight = false
	if err != nil {
		l.topUpErrors.Add(1)
		return
	}
	now := l.clock()
	l.expire(s, now)
	l.take(s, g, want, now)
}

type grant struct {
	n          int64
	windowLeft time.Duration
	server     time.Time
}

func (l *Lease) grant(ctx context.Context, id string, want int64) (grant, error) {
	var a hotpath.Args
	a.Key(l.prefix + id + "}")
	a.Int(l.limit)
	a.Int(l.wms)
	a.Int(want)
	if l.redisClock {
		a.String("")
	} else {
		a.Int(l.clock().UnixMicro())
	}
	var r []int64
	var err error
	if l.pool != nil {
		r, err = l.pool.EvalInts(ctx, leaseScript.hot, &a, nil)
	} else {
		keys, args := a.Values()
		r, err = leaseScript.redis.Run(ctx, l.client, keys, args...).Int64Slice()
	}
	if err != nil {
		return grant{}, fmt.Errorf("leasing grant for %q: %w", id, err)
	}
	if len(r) != 5 {
		return grant{}, fmt.Errorf("leasing grant for %q: reply has %d values, want 5", id, len(r))
	}
	g := grant{n: r[0], windowLeft: time.Duration(r[2]) * time.Millisecond}
	if r[4] >= 0 {
		g.server = time.UnixMicro(r[4])
	}
	return g, nil
}

// Kill marks the gateway dead: every slice it holds is stranded (budget
// granted in Redis that nobody will spend until its window ends) and no
// more top-ups start.
func (l *Lease) Kill() {
	if l.dead.Swap(true) {
		return
	}
	now := l.clock()
	for i := range l.state {
		l.mu[i].Lock()
		for _, s := range l.state[i] {
			l.expire(s, now)
			l.stranded.Add(s.left)
			s.left = 0
		}
		l.mu[i].Unlock()
	}
}

// Stats returns the budget counters.
func (l *Lease) Stats() LeaseStats {
	st := LeaseStats{
		Granted: l.granted.Load(), Spent: l.spent.Load(), Expired: l.expired.Load(),
		Stranded: l.stranded.Load(), TopUpErrors: l.topUpErrors.Load(),
	}
	now := l.clock()
	for i := range l.state {
		l.mu[i].Lock()
		for _, s := range l.state[i] {
			l.expire(s, now) // a slice past its window is expired, not held
			st.Held += s.left
		}
		l.mu[i].Unlock()
	}
	st.Expired = l.expired.Load()
	return st
}

// Close stops new top-ups, waits for those in flight (each bounded by the
// top-up timeout) and closes the grant pool; the client is the caller's.
func (l *Lease) Close() error {
	l.closed.Store(true)
	l.wg.Wait()
	if l.pool != nil {
		return l.pool.Close()
	}
	return nil
}

// Warm loads the grant script and opens conns connections for grants.
func (l *Lease) Warm(ctx context.Context, conns int) error {
	if err := leaseScript.redis.Load(ctx, l.client).Err(); err != nil {
		return fmt.Errorf("leasing: load script: %w", err)
	}
	return warm(ctx, l.pool, l.client, conns)
}
