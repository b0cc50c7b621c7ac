package inject

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/traffic"
)

// Setup is the deployment a run's faults act on.
type Setup struct {
	// Spec is the Redis spec the run opened (--redis over target.redis).
	Spec string
	// Redis is the gateways' Redis as opened, before any proxy.
	Redis *redisconn.Config
	// Options carry the TLS settings, timeout and environment for the
	// clients New makes (the proxy's, a stand-in's).
	Options redisconn.Options
	// Keys are the run's own keys: what redis-reset and a staged failover
	// delete, and what a stand-in copies.
	Keys keyspace.Patterns
	// Prefix is where the run's own keys live (the election probe writes
	// under it); "" when the run owns the whole Redis.
	Prefix string
	// Limiter is the simulated gateways' design, namespaced: counts_lost
	// reads its counters. Zero for a target of no design.
	Limiter limiter.Config
	// Replicas is the primary with replicas rlctl started for
	// target.replicate on redis: spawn, or nil.
	Replicas *redisconn.Deployment
}

// Faults are a run's faults set up on its deployment: the hooks to run on
// the run's clock and the client the gateways must use to feel them.
// Close it once the run is over.
type Faults struct {
	// Hooks carry out the faults at their offsets.
	Hooks []traffic.Hook
	// NewClient makes the gateways' clients (through the fault proxy when
	// there is one).
	NewClient func() redis.UniversalClient
	// Notes say how each fault was carried out.
	Notes []string

	closers []func() error
	// proxy is the fault proxy between the gateways and a standalone
	// Redis, when there is one.
	proxy *fault.Proxy
	// elections hold, by index in the scenario's faults, what each real
	// failover's hook saw (nil for other faults).
	elections []*election
	// reads[k] is when failover k's counts_lost read the new primary's
	// counters (zero when it did not).
	reads      []time.Time
	lc         limiter.Config
	skew       time.Duration // the gateways' largest clock offset
	extra      figures
	lostByID   figures // counts_lost by identity
	countsNote sync.Once
	// said is what the hooks said during the run.
	said runNotes
}

// Close stops what New started, last first.
func (f *Faults) Close() error {
	if f == nil {
		return nil
	}
	for i := len(f.closers) - 1; i >= 0; i-- {
		f.closers[i]()
	}
	f.closers = nil
	return nil
}

// Extra adds the figures the hooks measured in Redis (counts_lost) to dst
// (allocated when nil) and returns it.
func (f *Faults) Extra(dst map[string]float64) map[string]float64 {
	if f == nil {
		return dst
	}
	return f.extra.into(dst)
}

// CountsLostByIdentity is counts_lost identity by identity (only those
// that lost any), or nil when no failover read the counters.
func (f *Faults) CountsLostByIdentity() map[string]float64 {
	if f == nil {
		return nil
	}
	return f.lostByID.into(nil)
}

// RunNotes are what the hooks said during the run: how counts_lost was
// read, or why it is missing.
func (f *Faults) RunNotes() []string {
	if f == nil {
		return nil
	}
	return f.said.all()
}

// probeCleanupTimeout bounds the deletion of the election probe's key from
// a shared Redis.
const probeCleanupTimeout = 10 * time.Second

// New puts a fault proxy between the gateways and a standalone Redis (for
// failovers) and turns p's Redis faults into hooks on the run's clock;
// redis-down and redis-latency act on the gateways' own connections
// (networkFaults), on every topology. On error, what it started is
// stopped.
//
// On a Sentinel or Cluster (spawned, or the user's) there is no proxy: the
// gateways find the primary as their clients do, and failover and
// kill-primary are real (see realFailovers).
func New(ctx context.Context, p *Plan, s Setup) (_ *Faults, err error) {
	f := &Faults{lc: s.Limiter, skew: p.ClockSkew, reads: make([]time.Time, len(p.Faults))}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if err := f.build(ctx, p, s); err != nil {
		return nil, err
	}
	return f, nil
}

func (e *Faults) build(ctx context.Context, p *Plan, s Setup) error {
	cfg, spec, keys := s.Redis, s.Spec, s.Keys
	t := cfg.Target()
	tp := &topology{cfg: cfg, d: cfg.Deployment(), shardKey: ShardKey, probeKey: probeKeyOf(s.Prefix)}
	if s.Prefix != "" && redisconn.IsShared(spec) {
		e.closers = append(e.closers, func() error {
			c := cfg.NewClient()
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), probeCleanupTimeout)
			defer cancel()
			return c.Del(ctx, tp.probeKey).Err()
		})
	}
	if t.Mode == redisconn.ModeSentinel || t.Mode == redisconn.ModeCluster {
		return e.topologyFaults(ctx, p, cfg, keys, tp)
	}
	// Only a failover needs the proxy, to re-point the gateways; the other
	// faults act on their own connections (networkFaults) or on keys, so
	// without one the gateways reach Redis directly, as in a run without
	// faults, over TLS or a Unix socket too.
	gw := cfg
	var proxy *fault.Proxy
	real := false
	if NeedsReplica(p) {
		if t.Mode != redisconn.ModeStandalone || t.Network != "tcp" || t.TLS || len(t.Addrs) != 1 {
			return exitcode.With(fmt.Errorf("%s: a failover needs a plain standalone Redis (embedded, spawn or redis://host:port), not %s", p.Name, cfg), exitcode.Usage)
		}
		var err error
		if proxy, err = fault.NewProxy(t.Addrs[0]); err != nil {
			return err
		}
		e.closers = append(e.closers, proxy.Close)
		e.proxy = proxy
		// A spawned primary with a replica fails over for real; the
		// embedded Redis and a given one stage it.
		if real = tp.d != nil && len(tp.d.Servers) > 1; real {
			if err := e.realFailovers(ctx, p, tp); err != nil {
				return err
			}
		}
		popts := s.Options
		popts.URL = "redis://" + proxy.Addr()
		if t.Username != "" || t.Password != "" {
			popts.URL = "redis://" + t.Username + ":" + t.Password + "@" + proxy.Addr()
		}
		if gw, err = redisconn.Parse(popts); err != nil {
			return err
		}
	}
	admin := cfg.NewClient()
	e.closers = append(e.closers, admin.Close)
	for i, f := range p.Faults {
		switch f.Action {
		case design.FaultGatewayDown:
			if p.Kind != scenario.KindSimulated {
				return exitcode.With(fmt.Errorf("%s: gateway-down needs simulated gateways", p.Name), exitcode.Usage)
			}
		case design.FaultRedisReset:
			e.Hooks = append(e.Hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: func(ctx context.Context) {
				// Best effort: a fault that cannot be applied shows in the
				// figures.
				_, _ = keys.Delete(ctx, admin)
			}})
		case design.FaultFailover:
			if real {
				continue
			}
			if p.Replicate > 0 {
				if err := e.replicatedFailover(ctx, p, s, proxy, admin, i, f); err != nil {
					return err
				}
				continue
			}
			// The promoted replica had not caught up: it starts with empty
			// counters (and without the failover marker), which is what a
			// failover does to in-flight counts under async replication.
			if redisconn.IsShared(spec) {
				// A Redis the user pointed at: rlctl starts no server of its
				// own for it. The failover is staged on that Redis itself —
				// every connection cut, and the run's own keys (marker
				// included) gone, as on a replica that never received them.
				e.Hooks = append(e.Hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: e.countLost(i, admin, admin, func(ctx context.Context) {
					_, _ = keys.Delete(ctx, admin)
					proxy.SetUpstream(proxy.Upstream())
				})})
				e.Notes = append(e.Notes, "failover: staged on the given Redis by cutting every connection and deleting the run's own limiter keys and marker, as on a promoted replica that had not caught up")
				continue
			}
			after, addr, err := e.standIn(ctx, p, s)
			if err != nil {
				return err
			}
			e.Hooks = append(e.Hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: e.countLost(i, admin, after, func(context.Context) {
				proxy.SetUpstream(addr)
			})})
			e.Notes = append(e.Notes, "failover: an emulation, not a real promotion: the gateways' Redis was replaced by an empty one, as a promoted replica that had missed every count (empty counters, no marker; a replica_lag changes nothing here); --redis spawn, spawn-sentinel or spawn-cluster run a real failover")
		}
	}
	e.NewClient = e.networkFaults(p, gw).NewClient
	return nil
}

// networkFaults turns p's redis-down and redis-latency faults into hooks
// on a fault switch under every connection of the gateways' clients, and
// returns cfg with the switch as their dialer (cfg itself when p has
// neither fault). The switch acts on rlctl's own connections only, so the
// faults mean the same on every topology, a user's own included.
func (e *Faults) networkFaults(p *Plan, cfg *redisconn.Config) *redisconn.Config {
	var sw *fault.Switch
	for _, f := range p.Faults {
		if f.Action != design.FaultRedisDown && f.Action != design.FaultRedisLatency {
			continue
		}
		if sw == nil {
			sw = fault.NewSwitch()
		}
		apply, undo := func() { sw.SetDown(true) }, func() { sw.SetDown(false) }
		if f.Action == design.FaultRedisLatency {
			apply, undo = func() { sw.SetLatency(f.Latency) }, func() { sw.SetLatency(0) }
		}
		e.Hooks = append(e.Hooks, traffic.Hook{At: f.At, Name: f.Action, Holds: f.For > 0, Fn: func(ctx context.Context) {
			fault.Hold(ctx, f.For, func() { traffic.Applied(ctx); apply() }, undo)
		}})
	}
	if sw == nil {
		return cfg
	}
	e.Notes = append(e.Notes, "redis-down and redis-latency acted on the gateways' own connections (rlctl's fault switch as their clients' dialer, Sentinels and every node included): down cut them and answered every dial with a cut connection; latency delayed every byte they sent. Nothing was changed on any server")
	return cfg.WithDialer(sw.Dial)
}

// standIn opens a server of the run's spec to stand in for a promoted
// replica, and returns a client of it and its address.
func (e *Faults) standIn(ctx context.Context, p *Plan, s Setup) (redis.UniversalClient, string, error) {
	rcfg, stop, err := redisconn.OpenChecked(ctx, s.Spec, s.Options, 0)
	if err != nil {
		return nil, "", fmt.Errorf("%s: failover replica: %w", p.Name, err)
	}
	e.closers = append(e.closers, stop)
	after := rcfg.NewClient()
	e.closers = append(e.closers, after.Close)
	return after, rcfg.Target().Addrs[0], nil
}

// NeedsReplica reports whether p has a fault a replica must exist for:
// on spawn, such a scenario starts a primary with one replica.
func NeedsReplica(p *Plan) bool {
	for _, f := range p.Faults {
		if isFailover(f.Action) {
			return true
		}
	}
	return false
}

// isFailover reports whether a fault changes which node is primary.
func isFailover(action string) bool { return design.MovesPrimary(action) }

// Refuse says, before anything is started, why p's faults cannot run on
// the Redis spec names; nil when they can. allowFailover is
// --allow-failover. Each refusal is one line and carries exitcode.Usage.
func Refuse(p *Plan, spec string, allowFailover bool) error {
	if len(p.Faults) == 0 || p.Kind == scenario.KindHTTP {
		return nil
	}
	spec = strings.TrimSpace(spec)
	mode, own := redisconn.ModeStandalone, true
	switch spec {
	case redisconn.SpecSpawnSentinel:
		mode = redisconn.ModeSentinel
	case redisconn.SpecSpawnCluster:
		mode = redisconn.ModeCluster
	case redisconn.SpecSpawn, redisconn.SpecEmbedded, "":
	default:
		t, err := redisconn.ParseURL(spec)
		if err != nil {
			return nil // Open reports it
		}
		mode, own = t.Mode, false
	}
	replicated := own && spec != redisconn.SpecEmbedded && spec != ""
	refuse := func(format string, args ...any) error {
		return exitcode.With(fmt.Errorf("%s: "+format, append([]any{p.Name}, args...)...), exitcode.Usage)
	}
	for _, f := range p.Faults {
		switch {
		case f.Action == design.FaultKillPrimary && !replicated:
			return refuse("kill-primary needs a primary with a replica that rlctl started and may kill (--redis spawn, spawn-sentinel or spawn-cluster), not %s", redisconn.Redact(spec))
		case f.ReplicaLag > 0 && !own && mode != redisconn.ModeStandalone:
			// On a given standalone Redis the failover is staged (every
			// count lost), so a lag changes nothing there.
			return refuse("replica_lag cuts a replica off, and rlctl never reconfigures a server it did not start: use --redis spawn, spawn-sentinel or spawn-cluster")
		case isFailover(f.Action) && !own && mode != redisconn.ModeStandalone && !allowFailover:
			return refuse("a failover fault would promote a replica of your own %s: pass --allow-failover to allow it", mode)
		}
	}
	return nil
}

// Plan is what of a scenario its faults need: its name (for messages),
// its target's kind, the faults, the replicas its design waits for and
// the gateways' largest clock offset.
type Plan struct {
	Name      string
	Kind      string
	Faults    []scenario.Fault
	Replicate int
	ClockSkew time.Duration
}
