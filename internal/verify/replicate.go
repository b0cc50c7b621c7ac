package verify

import (
	"context"
	"fmt"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault/inject"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
)

// openSimulated opens the simulated gateways' Redis: with replicate on
// redis: spawn, a primary and that many replicas, else as openRedis does.
func (e *env) openSimulated(ctx context.Context, sc *scenario.Scenario, spec string, o Options) (*redisconn.Config, func() error, error) {
	n := sc.Target.Replicate
	if n == 0 || spec != redisconn.SpecSpawn {
		return openRedis(ctx, spec, o, inject.NeedsReplica(sc))
	}
	d, err := redisconn.Spawn(ctx, redisconn.SpawnOptions{Replicas: n})
	if err != nil {
		return nil, nil, exitcode.With(fmt.Errorf("%s: spawn a primary with %d replicas: %w", sc.Name, n, err), exitcode.Unreachable)
	}
	opts := o.RedisOptions
	opts.URL = d.ServerURL(0)
	cfg, err := redisconn.Parse(opts)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	e.replicas = d
	return cfg, d.Close, nil
}
