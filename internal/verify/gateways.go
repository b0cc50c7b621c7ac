package verify

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
)

// newGateways builds the simulated gateways sc's target describes: its
// count, clock skew and endpoints, each endpoint under its failure policy
// (its own timeout, else the target's), every gateway running the design lc
// with a client of its own from newClient (nil for the local designs).
// It is the one place a run or a served gateway gets its gateway.Set.
func newGateways(ctx context.Context, sc *scenario.Scenario, lc limiter.Config, newClient func() redis.UniversalClient) (*gateway.Set, error) {
	eps := make([]gateway.Endpoint, len(sc.Target.Endpoints))
	for i, ep := range sc.Target.Endpoints {
		timeout := ep.Timeout
		if timeout <= 0 {
			timeout = sc.Target.Timeout
		}
		eps[i] = gateway.Endpoint{Name: ep.Name, Share: ep.Share, Policy: limiter.Policy{
			OnError: ep.OnError, Timeout: timeout, Local: ep.Local, OnFailover: ep.OnFailover,
		}}
	}
	return gateway.New(ctx, gateway.Options{
		N: sc.Target.Gateways, Limiter: lc, Endpoints: eps, NewClient: newClient,
		ClockSkew: sc.Target.ClockSkew,
	})
}

// OpenGateways opens the Redis sc's target names (o.Redis, when set, in
// its place) unless its design is local, and builds the simulated gateways
// the target describes on it, keys under the target's own prefix, for
// serving them (rlctl gateway serve). The Redis it starts and the gateways
// outlive ctx, which bounds only the first PING, so that a server stopped
// by a signal can still decide the requests in flight while it drains;
// stop closes the gateways, then the Redis.
func OpenGateways(ctx context.Context, sc *scenario.Scenario, o Options) (set *gateway.Set, stop func() error, err error) {
	life := context.WithoutCancel(ctx)
	stopRedis := func() error { return nil }
	var newClient func() redis.UniversalClient
	lc := limiterConfig(sc)
	if !limiter.IsLocal(lc.Algorithm) {
		cfg, closeRedis, err := redisconn.Open(life, redisSpec(sc, o), o.RedisOptions)
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
	set, err = newGateways(life, sc, lc, newClient)
	if err != nil {
		stopRedis()
		return nil, nil, err
	}
	return set, func() error { return errors.Join(set.Close(), stopRedis()) }, nil
}
