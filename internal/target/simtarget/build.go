package simtarget

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault"
	"github.com/rlctl/rlctl/internal/fault/inject"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target"
	"github.com/rlctl/rlctl/internal/traffic"
)

func init() {
	target.Register(target.Kind{Name: scenario.KindSimulated, Section: section, Build: build})
}

// build starts the simulated gateways s describes, on their Redis unless
// the design is local, with s's faults set up under them.
func build(ctx context.Context, s target.Spec) (_ *target.Built, err error) {
	b := &target.Built{}
	ok := false
	defer b.Closing(&ok)()
	if err := inject.Refuse(s.FaultPlan(), s.Redis, s.AllowFailover); err != nil {
		return nil, err
	}
	lc := LimiterConfig(s.Target, s.Limit)
	var newClient func() redis.UniversalClient
	if !limiter.IsLocal(lc.Algorithm) {
		b.Embedded = s.Redis == "" || s.Redis == scenario.RedisEmbedded
		cfg, replicas, stop, err := openRedis(ctx, s)
		if err != nil {
			return nil, err
		}
		b.Defer(stop)
		note, err := inject.Replicate(ctx, cfg, &lc)
		if err != nil {
			return nil, err
		}
		if note != "" {
			b.Notes = append(b.Notes, note)
		}
		b.Redis, b.Clock = cfg, target.RedisClock(cfg)
		ns := target.Namespace(s.Redis)
		lc.Prefix += ns
		keys := target.PrefixKeys(lc.Prefix)
		b.Own(cfg, keys, ns)
		b.RecordShards(ctx, s, cfg, func(id string) (string, error) {
			return limiter.Keys(lc, id, time.Now())[0], nil
		})
		newClient = cfg.NewClient
		if len(s.Faults) > 0 {
			setup := inject.Setup{Spec: s.Redis, Redis: cfg, Options: s.RedisOptions, Keys: keys, Prefix: lc.Prefix, Limiter: lc, Replicas: replicas}
			if newClient, err = b.WithFaults(ctx, s, setup); err != nil {
				return nil, err
			}
		}
		if dd, ok := design.Lookup(lc.Algorithm); ok && dd.Keys.Value == design.ValueLog {
			b.OnFinish(func(ctx context.Context, h *history.History, f *target.Finished) {
				f.Notes = append(f.Notes, logMemoryNote(ctx, cfg, lc, s, h.Meta.Identities)...)
			})
		}
	}
	set, err := newGateways(ctx, s.Target, lc, newClient)
	if err != nil {
		return nil, fmt.Errorf("%s: gateways: %w", s.Name, err)
	}
	b.Defer(set.Close)
	b.Target = New(set)
	b.KeyBySource(s)
	for _, f := range s.Faults {
		if f.Action == design.FaultGatewayDown {
			gw, hold := f.Gateway, f.For
			b.Hooks = append(b.Hooks, traffic.Hook{At: f.At, Name: f.Action, Holds: hold > 0, Fn: func(ctx context.Context) {
				// Killed, and revived after for (or when the run ends); a
				// revive that fails leaves it down, which its requests show.
				fault.Hold(ctx, hold, func() { set.Kill(gw) }, func() { _ = set.Revive(gw) })
			}})
		}
	}
	if dd, ok := design.Lookup(lc.Algorithm); ok && dd.State == design.StateLease {
		b.OnFinish(func(_ context.Context, _ *history.History, f *target.Finished) {
			if f.Extra == nil {
				f.Extra = map[string]float64{}
			}
			f.Extra[metric.StrandedLease] = float64(set.Stats().LeaseStranded)
		})
	}
	ok = true
	return b, nil
}

// openRedis opens the simulated gateways' Redis: with replicate on redis:
// spawn, a primary and that many replicas (returned, for the faults to
// promote), else the Redis s names, with one replica on spawn when a fault
// fails over.
func openRedis(ctx context.Context, s target.Spec) (*redisconn.Config, *redisconn.Deployment, func() error, error) {
	n := s.Target.Replicate
	if n == 0 || s.Redis != redisconn.SpecSpawn {
		cfg, stop, err := target.OpenRedis(ctx, s, inject.NeedsReplica(s.FaultPlan()))
		return cfg, nil, stop, err
	}
	d, err := redisconn.Spawn(ctx, redisconn.SpawnOptions{Replicas: n})
	if err != nil {
		return nil, nil, nil, exitcode.With(fmt.Errorf("%s: spawn a primary with %d replicas: %w", s.Name, n, err), exitcode.Unreachable)
	}
	opts := s.RedisOptions
	opts.URL = d.ServerURL(0)
	cfg, err := redisconn.Parse(opts)
	if err != nil {
		d.Close()
		return nil, nil, nil, err
	}
	return cfg, d, d.Close, nil
}

// LimiterConfig is the design t's simulated gateways run, under limit.
func LimiterConfig(t scenario.Target, limit rate.Limit) limiter.Config {
	prefix := t.Prefix
	if prefix == "" {
		prefix = limiter.DefaultPrefix
	}
	return limiter.Config{
		Algorithm: t.Algorithm, Limit: limit, Capacity: t.Capacity,
		Prefix: prefix, Clock: t.Clock, Pause: t.Pause,
		Replicate: t.Replicate, ReplicateTimeout: t.ReplicateTimeout,
		Lease: limiter.LeaseConfig{Size: t.Lease.Size, RefillBelow: t.Lease.RefillBelow, Adaptive: t.Lease.Adaptive},
	}
}

// newGateways builds the simulated gateways t describes: its count, clock
// skew and endpoints, each endpoint under its failure policy (its own
// timeout, else the target's), every gateway running the design lc with a
// client of its own from newClient (nil for the local designs). It is the
// one place a run or a served gateway gets its gateway.Set.
func newGateways(ctx context.Context, t scenario.Target, lc limiter.Config, newClient func() redis.UniversalClient) (*gateway.Set, error) {
	eps := make([]gateway.Endpoint, len(t.Endpoints))
	for i, ep := range t.Endpoints {
		timeout := ep.Timeout
		if timeout <= 0 {
			timeout = t.Timeout
		}
		eps[i] = gateway.Endpoint{Name: ep.Name, Share: ep.Share, Policy: limiter.Policy{
			OnError: ep.OnError, Timeout: timeout, Local: ep.Local, OnFailover: ep.OnFailover,
		}}
	}
	return gateway.New(ctx, gateway.Options{
		N: t.Gateways, Limiter: lc, Endpoints: eps, NewClient: newClient,
		ClockSkew: t.ClockSkew,
	})
}

// OpenGateways opens the Redis s names unless its design is local, and
// builds the simulated gateways s's target describes on it, keys under the
// target's own prefix, for serving them (rlctl gateway serve). The Redis
// it starts and the gateways outlive ctx, which bounds only the first
// PING, so that a server stopped by a signal can still decide the requests
// in flight while it drains; stop closes the gateways, then the Redis.
func OpenGateways(ctx context.Context, s target.Spec) (set *gateway.Set, stop func() error, err error) {
	life := context.WithoutCancel(ctx)
	stopRedis := func() error { return nil }
	var newClient func() redis.UniversalClient
	lc := LimiterConfig(s.Target, s.Limit)
	if !limiter.IsLocal(lc.Algorithm) {
		cfg, closeRedis, err := redisconn.Open(life, s.Redis, s.RedisOptions)
		if err != nil {
			return nil, nil, err
		}
		c, err := cfg.Connect(ctx)
		if err != nil {
			closeRedis()
			return nil, nil, err
		}
		c.Close()
		stopRedis, newClient = closeRedis, cfg.NewClient
	}
	set, err = newGateways(life, s.Target, lc, newClient)
	if err != nil {
		stopRedis()
		return nil, nil, err
	}
	return set, func() error { return errors.Join(set.Close(), stopRedis()) }, nil
}

// logMemoryNote reads, right after the run and while the logs are still
// alive, how big the sliding log of the busiest identities is: the price of
// its exactness, one entry per admitted request in the last window.
func logMemoryNote(ctx context.Context, cfg *redisconn.Config, lc limiter.Config, s target.Spec, ids []string) []string {
	c := cfg.NewClient()
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var entries, bytes int64
	var worst string
	for _, id := range ids[:min(len(ids), 50)] {
		for _, k := range limiter.Keys(lc, id, time.Now()) {
			n, err := c.ZCard(ctx, k).Result()
			if err != nil || n <= entries {
				continue
			}
			entries, worst = n, id
			// MEMORY USAGE is a real Redis's; the embedded one lacks it.
			bytes, _ = c.MemoryUsage(ctx, k).Result()
		}
	}
	if worst == "" {
		return nil
	}
	size := ""
	if bytes > 0 {
		size = fmt.Sprintf(" (%d bytes)", bytes)
	}
	return []string{fmt.Sprintf("sliding log: %s's log held %d entries%s at the end, one per request admitted in the last %s; its memory grows with the allowed rate × W for every identity", worst, entries, size, s.Limit.Window)}
}
