package inject

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/traffic"
)

// electionLimit bounds how long a failover hook watches for the new
// primary; a topology that elects none by then shows as an outage.
const electionLimit = 15 * time.Second

// electionProbeEvery is how often the watch writes to the old primary and
// the candidates.
const electionProbeEvery = 10 * time.Millisecond

// election is what a failover hook saw, on the wall clock, read into the
// history once the run is over.
type election struct {
	mu                sync.Mutex
	stopped, answered time.Time
	// began is when the failover was started, ended when the run's end
	// cut the watch short before a new primary took a write (zero when it
	// did not).
	began, ended time.Time
	err          error
	lagErr       error     // replica_lag could not be set up
	held         time.Time // when replica_lag cut the replica off
	// old is the primary a Sentinel or Cluster failover acted on, and
	// demoted when it refused a write after the new one took its first
	// (history.Fault.Demoted).
	old     string
	demoted time.Time
	// shard is the Cluster shard the failover acted on (its primary's
	// address before it), "" elsewhere: history.Fault.Shard.
	shard string
}

// set records what the failover's step saw. A step cancelled because the
// run ended while it was under way is no fault of the deployment: the run
// ended then, before the election (see RecordElections).
func (e *election) set(stopped, answered time.Time, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		e.ended, err = time.Now(), nil
	}
	e.stopped, e.answered, e.err = stopped, answered, err
}

// begin records that the failover starts now.
func (e *election) begin() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.began = time.Now()
}

// watched records the watch's outcome w: ctx is the hook's, done once the
// run has ended.
func (e *election) watched(ctx context.Context, stopped time.Time, w fault.Election) {
	e.set(stopped, w.Answered, nil)
	if w.Answered.IsZero() && ctx.Err() != nil {
		e.mu.Lock()
		e.ended = time.Now()
		e.mu.Unlock()
	}
}

// awaitDemotion, after a failover whose new primary took a write while the
// old one had refused none, watches the old one until it refuses one (a
// graceful Sentinel failover leaves it taking writes until Sentinel turns
// it into a replica), or until the run ends.
func (e *election) awaitDemotion(ctx context.Context, tp *topology) {
	e.mu.Lock()
	addr, wait := e.old, !e.answered.IsZero() && e.stopped.IsZero()
	e.mu.Unlock()
	if !wait || addr == "" {
		return
	}
	old, closeOld := tp.probe(addr)
	defer closeOld()
	ctx, cancel := context.WithTimeout(ctx, electionLimit)
	defer cancel()
	if t := fault.WatchStop(ctx, old, electionProbeEvery); !t.IsZero() {
		e.mu.Lock()
		e.demoted = t
		e.mu.Unlock()
	}
}

// RecordElections writes what the failover hooks saw into h's faults, as
// offsets from the run's start (the elections, and when counts_lost read
// the new primary), and returns the notes on them and, for
// each failover that could not be carried out or whose election never
// finished, why.
func (e *Faults) RecordElections(h *history.History) (notes, unapplied []string) {
	if e == nil {
		return nil, nil
	}
	offset := func(t time.Time) time.Duration {
		if t.IsZero() {
			return 0
		}
		return max(t.Sub(h.Meta.Start), time.Nanosecond)
	}
	for i, t := range e.reads {
		if i < len(h.Meta.Faults) {
			h.Meta.Faults[i].Read = offset(t)
		}
	}
	for i, el := range e.elections {
		if el == nil || i >= len(h.Meta.Faults) {
			continue
		}
		el.mu.Lock()
		f := &h.Meta.Faults[i]
		f.Stopped, f.Answered, f.Demoted, f.Held = offset(el.stopped), offset(el.answered), offset(el.demoted), offset(el.held)
		f.Shard = el.shard
		if el.lagErr != nil {
			notes = append(notes, fmt.Sprintf("%s at %s ran without its replica_lag: %v", f.Action, f.At.Round(time.Millisecond), el.lagErr))
		}
		switch {
		case el.err != nil:
			unapplied = append(unapplied, fmt.Sprintf("%s at %s could not be carried out: %v", f.Action, f.At.Round(time.Millisecond), el.err))
		case el.began.IsZero():
			unapplied = append(unapplied, fmt.Sprintf("%s at %s was not carried out: the run ended first", f.Action, f.At.Round(time.Millisecond)))
		case f.Answered == 0:
			unapplied = append(unapplied, fault.Unfinished(f.Action, f.At, el.began, el.ended, electionLimit))
		}
		el.mu.Unlock()
	}
	return notes, unapplied
}

// topology is how real failovers reach the nodes of a deployment: one
// rlctl spawned (d set) or the user's own Sentinel or Cluster.
type topology struct {
	cfg *redisconn.Config
	d   *redisconn.Deployment
	// shardKey picks the Cluster shard to fail over: a key with the first
	// identity's hash tag, so the shard holding its counters.
	shardKey string
	// probeKey is the key the election watch writes, in shardKey's slot
	// and among the run's own keys.
	probeKey string
}

// shard finds the primary and replicas a failover acts on now.
func (tp *topology) shard(ctx context.Context) (redisconn.Shard, error) {
	switch tp.cfg.Mode() {
	case redisconn.ModeCluster:
		return tp.cfg.ClusterShard(ctx, tp.shardKey)
	case redisconn.ModeSentinel:
		return tp.cfg.SentinelShard(ctx)
	}
	// spawn with a replica: the gateways reach the primary through the
	// fault proxy, so the deployment says which node that is.
	var sh redisconn.Shard
	for i, p := range tp.d.Servers {
		if i == tp.d.Primary() {
			sh.Primary = p.Addr
		} else if p.Alive() {
			sh.Replicas = append(sh.Replicas, p.Addr)
		}
	}
	return sh, nil
}

// probe writes the probe key on the node at addr; the caller closes the
// returned client.
func (tp *topology) probe(addr string) (fault.Probe, func() error) {
	c := tp.cfg.NodeClient(addr, false)
	return func(ctx context.Context) error { return c.Set(ctx, tp.probeKey, "old", time.Minute).Err() }, c.Close
}

// landed reports, through clients of the candidates, whether token is the
// probe key's value on a candidate that is now a primary.
func (tp *topology) landed(candidates []string) (func(context.Context, string) bool, func()) {
	var cs []*redis.Client
	for _, a := range candidates {
		cs = append(cs, tp.cfg.NodeClient(a, false))
	}
	return func(ctx context.Context, token string) bool {
			for _, c := range cs {
				role, err := c.Do(ctx, "ROLE").Slice()
				if err != nil || len(role) == 0 || role[0] != "master" {
					continue
				}
				if v, err := c.Get(ctx, tp.probeKey).Result(); err == nil && v == token {
					return true
				}
			}
			return false
		}, func() {
			for _, c := range cs {
				c.Close()
			}
		}
}

// watch waits for the election after a failover began on sh: when the old
// primary first refused a write, and when a write through the topology's
// own client (Sentinel discovery, Cluster redirects: what the gateways use)
// first landed on a promoted replica.
func (tp *topology) watch(ctx context.Context, sh redisconn.Shard) fault.Election {
	old, closeOld := tp.probe(sh.Primary)
	defer closeOld()
	landed, closeLanded := tp.landed(sh.Replicas)
	defer closeLanded()
	c := tp.cfg.NewClient()
	defer c.Close()
	via := func(ctx context.Context, token string) error {
		return c.Set(ctx, tp.probeKey, token, time.Minute).Err()
	}
	ctx, cancel := context.WithTimeout(ctx, electionLimit)
	defer cancel()
	return fault.WatchElection(ctx, fault.Watch{Old: old, Via: via, Landed: landed}, electionProbeEvery)
}

// failover starts f on sh: SENTINEL FAILOVER, CLUSTER FAILOVER on a
// replica of the shard in sync with it (on its first replica with FORCE
// when its replication is held back: it cannot catch up), or SIGKILL of
// the primary (rlctl's own only). sending is called just before the
// command that starts it, after the checks that may wait, so the fault is
// timed from there.
func (tp *topology) failover(ctx context.Context, action string, sh redisconn.Shard, held bool, sending func()) error {
	if action == design.FaultKillPrimary {
		sending()
		return tp.d.KillAddr(sh.Primary)
	}
	switch tp.cfg.Mode() {
	case redisconn.ModeSentinel:
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		sending()
		return tp.cfg.SentinelFailover(fctx)
	case redisconn.ModeCluster:
		if len(sh.Replicas) == 0 {
			return fmt.Errorf("the shard of %s has no replica", sh.Primary)
		}
		if held {
			// The replica was cut off on purpose (replica_lag): FORCE
			// takes over without the writes it missed.
			c := tp.cfg.NodeClient(sh.Replicas[0], false)
			defer c.Close()
			sending()
			return c.Do(ctx, "CLUSTER", "FAILOVER", "FORCE").Err()
		}
		// Without FORCE: the replica has its primary pause writers and
		// waits until it has every write, then takes over, as an operator's
		// manual failover does; one that is not in sync would give up
		// unseen, so one that is is chosen first.
		replica, err := tp.cfg.InSyncReplica(ctx, sh, redisconn.ReplicaSyncWait)
		if err != nil {
			return err
		}
		c := tp.cfg.NodeClient(replica, false)
		defer c.Close()
		sending()
		return c.Do(ctx, "CLUSTER", "FAILOVER").Err()
	}
	return errors.New("no failover for this deployment")
}

// realFailovers turns p's failover and kill-primary faults into hooks that
// carry them out on the deployment, and refuses up front what cannot be
// carried out there.
func (e *Faults) realFailovers(ctx context.Context, p *Plan, tp *topology) error {
	own := tp.d != nil
	kind := map[redisconn.Mode]string{redisconn.ModeSentinel: "Sentinel", redisconn.ModeCluster: "Cluster"}[tp.cfg.Mode()]
	if kind == "" {
		kind = "primary and replica"
	}
	sh, err := tp.shard(ctx)
	if err != nil {
		return exitcode.With(fmt.Errorf("%s: failover: %w", p.Name, err), exitcode.Unreachable)
	}
	if len(sh.Replicas) == 0 {
		return exitcode.With(fmt.Errorf("%s: failover: the primary %s has no replica to promote", p.Name, sh.Primary), exitcode.Usage)
	}
	e.elections = make([]*election, len(p.Faults))
	for i, f := range p.Faults {
		if !isFailover(f.Action) {
			continue
		}
		el := &election{}
		e.elections[i] = el
		if f.ReplicaLag > 0 {
			e.Hooks = append(e.Hooks, traffic.Hook{At: f.At - f.ReplicaLag, Name: "replica-lag", Fn: func(ctx context.Context) {
				sh, err := tp.shard(ctx)
				if err == nil {
					err = tp.d.HoldReplication(ctx, sh.Primary)
				}
				el.mu.Lock()
				el.lagErr = err
				if err == nil {
					el.held = time.Now()
				}
				el.mu.Unlock()
			}})
		}
		action := f.Action
		// counts_lost: the design's counters as the gateways reach them,
		// just before the failover and once the election is over.
		reach := func() (redis.UniversalClient, func() error) {
			if tp.cfg.Mode() == redisconn.ModeStandalone {
				c := tp.cfg.NodeClient(e.proxy.Addr(), false)
				return c, c.Close
			}
			c := tp.cfg.NewClient()
			return c, c.Close
		}
		// The counters are read right after the election, before the wait
		// for the old primary's demotion.
		failover := e.countLostVia(i, reach, reach, func(ctx context.Context) {
			sh, err := tp.shard(ctx)
			if err != nil {
				el.set(time.Time{}, time.Time{}, err)
				return
			}
			if tp.cfg.Mode() == redisconn.ModeStandalone {
				e.promoteSpawned(ctx, tp, action, el)
				return
			}
			el.mu.Lock()
			el.old = sh.Primary
			if tp.cfg.Mode() == redisconn.ModeCluster {
				el.shard = sh.Primary
			}
			el.mu.Unlock()
			sending := func() {
				traffic.Applied(ctx)
				el.begin()
			}
			if err := tp.failover(ctx, action, sh, f.ReplicaLag > 0, sending); err != nil {
				el.set(time.Time{}, time.Time{}, err)
				return
			}
			w := tp.watch(ctx, sh)
			el.watched(ctx, w.Stopped, w)
		})
		e.Hooks = append(e.Hooks, traffic.Hook{At: f.At, Name: action, Fn: func(ctx context.Context) {
			failover(ctx)
			el.awaitDemotion(ctx, tp)
		}})
	}
	what := map[bool]string{true: "rlctl's own " + kind, false: "your " + kind + " (--allow-failover)"}[own]
	e.Notes = append(e.Notes, fmt.Sprintf("failover faults were real, on %s: the election is the span from the old primary's first refused write to the first write the gateways' client got through again", what))
	return nil
}

// promoteSpawned fails over a spawned primary with one replica and no
// Sentinel: the gateways' proxy is re-pointed at the replica (their
// connections cut), which is then promoted with REPLICAOF NO ONE; with
// kill-primary the primary is SIGKILLed first. The proxy is set by New.
func (e *Faults) promoteSpawned(ctx context.Context, tp *topology, action string, el *election) {
	d := tp.d
	old := d.Primary()
	next := 1 - old
	el.begin()
	if action == design.FaultKillPrimary {
		if err := d.Kill(old); err != nil {
			el.set(time.Time{}, time.Time{}, err)
			return
		}
	}
	stopped := time.Now()
	e.proxy.SetUpstream(d.Servers[next].Addr)
	if err := d.Promote(ctx, next); err != nil {
		el.set(stopped, time.Time{}, err)
		return
	}
	// Through the proxy, as the gateways write.
	c := tp.cfg.NodeClient(e.proxy.Addr(), false)
	defer c.Close()
	via := func(ctx context.Context, token string) error {
		return c.Set(ctx, tp.probeKey, token, time.Minute).Err()
	}
	landed, closeLanded := tp.landed([]string{d.Servers[next].Addr})
	defer closeLanded()
	wctx, cancel := context.WithTimeout(ctx, electionLimit)
	defer cancel()
	el.watched(ctx, stopped, fault.WatchElection(wctx, fault.Watch{Via: via, Landed: landed}, electionProbeEvery))
}

// ShardKey is a key in the slot of the first identity's keys: the
// simulated designs tag every key with {identity}, and a redis-script's
// templates can ({{{id}}}).
const ShardKey = "{user-0}"

// probeKeyOf is the election probe's key: under the run's own prefix, in
// the first identity's slot.
func probeKeyOf(prefix string) string {
	return prefix + "election-probe:" + ShardKey
}

// topologyFaults sets up p's faults on a Sentinel or Cluster, which the
// gateways reach through their own discovery rather than through the fault
// proxy: failover and kill-primary are real, redis-reset deletes the run's
// keys on every primary, and redis-down and redis-latency act on the
// gateways' own connections (networkFaults).
func (e *Faults) topologyFaults(ctx context.Context, p *Plan, cfg *redisconn.Config, keys keyspace.Patterns, tp *topology) error {
	for _, f := range p.Faults {
		switch f.Action {
		case design.FaultRedisReset:
			admin := cfg.NewClient()
			e.closers = append(e.closers, admin.Close)
			e.Hooks = append(e.Hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: func(ctx context.Context) {
				// Best effort: a fault that cannot be applied shows in the
				// figures.
				_, _ = keys.Delete(ctx, admin)
			}})
		}
	}
	if NeedsReplica(p) {
		if err := e.realFailovers(ctx, p, tp); err != nil {
			return err
		}
	}
	e.NewClient = e.networkFaults(p, cfg).NewClient
	return nil
}
