package verify

import (
	"context"

	"github.com/rlctl/rlctl/internal/fault"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/traffic"
)

// networkFaults turns sc's redis-down and redis-latency faults into hooks
// on a fault switch under every connection of the gateways' clients, and
// returns cfg with the switch as their dialer (cfg itself when sc has
// neither fault). The switch acts on rlctl's own connections only, so the
// faults mean the same on every topology, a user's own included.
func (e *env) networkFaults(sc *scenario.Scenario, cfg *redisconn.Config) *redisconn.Config {
	var sw *fault.Switch
	for _, f := range sc.Faults {
		if f.Action != scenario.FaultRedisDown && f.Action != scenario.FaultRedisLatency {
			continue
		}
		if sw == nil {
			sw = fault.NewSwitch()
		}
		apply, undo := func() { sw.SetDown(true) }, func() { sw.SetDown(false) }
		if f.Action == scenario.FaultRedisLatency {
			apply, undo = func() { sw.SetLatency(f.Latency) }, func() { sw.SetLatency(0) }
		}
		e.hooks = append(e.hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: func(ctx context.Context) {
			fault.Hold(ctx, f.For, apply, undo)
		}})
	}
	if sw == nil {
		return cfg
	}
	e.notes = append(e.notes, "redis-down and redis-latency acted on the gateways' own connections (rlctl's fault switch as their clients' dialer, Sentinels and every node included): down cut them and answered every dial with a cut connection; latency delayed every byte they sent. Nothing was changed on any server")
	return cfg.WithDialer(sw.Dial)
}
