package httptarget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault"
	"github.com/rlctl/rlctl/internal/fault/deploy"
	"github.com/rlctl/rlctl/internal/fault/toxiproxy"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target"
	"github.com/rlctl/rlctl/internal/traffic"
)

// counterTimeout bounds one reading of the run identities' counters.
const counterTimeout = 2 * time.Second

// electionLimit bounds the watch of one election on the deployment.
const electionLimit = 30 * time.Second

// consent refuses, before anything is opened, a fault on the deployment
// that its flag on the command line did not allow: exit 2, naming the
// flag. A scenario file alone never allows one.
func consent(s target.Spec) error {
	for _, f := range s.Faults {
		switch {
		case f.Action == design.FaultFailover && !s.AllowFailover:
			return s.Errorf("%s at %s would promote a replica of your own deployment (%s): pass --allow-failover to allow it", f.Action, f.At, redisconn.Redact(s.Redis))
		case f.Action != design.FaultFailover && !s.AllowFaults:
			return s.Errorf("%s at %s acts on your own deployment (%s): pass --allow-faults to allow it", f.Action, f.At, deploymentName(s))
		}
	}
	return nil
}

func deploymentName(s target.Spec) string {
	if tp := ConfigOf(s.Target).Toxiproxy; tp.Set() {
		return "Toxiproxy " + tp.API + " proxy " + tp.Proxy
	}
	return redisconn.Redact(s.Redis)
}

// deployment is an http target's own Redis, as target.redis names it:
// rlctl reads the run identities' counters there through their layout and,
// with consent, acts on it.
type deployment struct {
	s      target.Spec
	cfg    *redisconn.Config
	client redis.UniversalClient
	schema *keyspace.Schema // nil: no layout named
	ids    []string

	mu        sync.Mutex
	start     *keyspace.Counts
	lost      map[string]float64
	lostRead  bool
	elections map[int]*election // by index in s.Faults
	notes     []string
	failed    []string // faults not carried out, and why
}

// election is what a failover hook saw of one election on the deployment.
type election struct {
	asked time.Time // FAILOVER sent
	ended time.Time // the run ended before the new primary took a write
	seen  deploy.Election
	err   error
}

// fail records why the failover could not be carried out, unless the
// run's end cancelled it while under way: no fault of the deployment, the
// run ended then, before the election.
func (el *election) fail(err error) {
	if errors.Is(err, context.Canceled) {
		el.ended = time.Now()
		return
	}
	el.err = err
}

// openDeployment opens the Redis s names, reads the run identities'
// counters once before any traffic and turns s's faults into hooks on b.
// With no Redis named (or one rlctl would start) it sets up only the
// faults through Toxiproxy, and returns nil.
func openDeployment(ctx context.Context, b *target.Built, s target.Spec, ids []string) (*deployment, error) {
	if s.Redis == "" || !redisconn.IsShared(s.Redis) {
		// Without the deployment's Redis only the faults through its
		// Toxiproxy can run (the scenario refused the others).
		d := &deployment{s: s, ids: ids}
		if err := d.faults(ctx, b); err != nil {
			return nil, err
		}
		b.OnFinish(d.finish)
		return nil, nil
	}
	cfg, stop, err := target.OpenRedis(ctx, s, false)
	if err != nil {
		return nil, err
	}
	b.Defer(stop)
	d := &deployment{s: s, cfg: cfg, client: cfg.NewClient(), ids: ids, elections: map[int]*election{}}
	b.Defer(d.client.Close)
	if d.schema, err = schemaOf(s); err != nil {
		return nil, exitcode.With(fmt.Errorf("%s: http target: %w", s.Name, err), exitcode.Usage)
	}
	if d.schema != nil {
		start, err := d.read(ctx)
		if err != nil {
			return nil, exitcode.With(fmt.Errorf("%s: read the run identities' counters (%s) before the run: %w", s.Name, d.schema.Name, err), exitcode.Unreachable)
		}
		d.start = start
		b.Notes = append(b.Notes, fmt.Sprintf("the gateways' counters were read (read-only) in %s through the %s layout: at the start, around each fault and at the end", redisconn.Redact(s.Redis), d.schema.Name))
	}
	if err := d.faults(ctx, b); err != nil {
		return nil, err
	}
	b.OnFinish(d.finish)
	return d, nil
}

// schemaOf is the layout s names (target.schema, or target.pattern as a
// string counter per identity), nil when none.
func schemaOf(s target.Spec) (*keyspace.Schema, error) {
	switch {
	case ConfigOf(s.Target).Schema != "":
		return keyspace.NewRegistry(keyspace.Params{Limit: s.Limit}).Lookup(ConfigOf(s.Target).Schema)
	case ConfigOf(s.Target).Pattern != "":
		return keyspace.CustomSchema(keyspace.CustomSpec{Name: "target.pattern", Pattern: ConfigOf(s.Target).Pattern, Type: "string", Window: s.Limit.Window, Limit: s.Limit.Count})
	}
	return nil, nil
}

// read reads every run identity's counter, bounded by counterTimeout.
func (d *deployment) read(ctx context.Context) (*keyspace.Counts, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), counterTimeout)
	defer cancel()
	return keyspace.ReadCounts(ctx, d.client, d.schema, d.ids)
}

// faults turns s's faults into hooks, each acting only on what the
// scenario named; consent was given (see consent).
func (d *deployment) faults(ctx context.Context, b *target.Built) error {
	tp := ConfigOf(d.s.Target).Toxiproxy
	var tox *toxiproxy.Client
	for i, f := range d.s.Faults {
		f := f
		switch f.Action {
		case design.FaultFailover:
			if d.cfg.Mode() == redisconn.ModeCluster && d.schema == nil {
				return d.s.Errorf("failover on a Cluster fails over the shard holding the run identities' counters: name their layout in target.schema or target.pattern")
			}
			el := &election{}
			d.elections[i] = el
			b.Hooks = append(b.Hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: func(ctx context.Context) { d.failover(ctx, el) }})
		case design.FaultRedisStall:
			// A Redis that cannot be paused is refused before any traffic.
			if err := deploy.CheckStall(ctx, d.client); err != nil {
				return fmt.Errorf("%s: %w", d.s.Name, err)
			}
			mode := deploy.StallWrite
			if f.Mode == design.StallAll {
				mode = deploy.StallAll
			}
			b.Hooks = append(b.Hooks, traffic.Hook{At: f.At, Name: f.Action, Holds: true, Fn: func(ctx context.Context) {
				traffic.Applied(ctx)
				undo, err := deploy.Stall(ctx, d.client, f.For, mode)
				if err != nil {
					d.unapplied(f, err)
					return
				}
				wait(ctx, f.For)
				if ctx.Err() != nil && mode == deploy.StallWrite {
					_ = undo(context.WithoutCancel(ctx))
				}
			}})
		case design.FaultRedisReset:
			b.Hooks = append(b.Hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: func(ctx context.Context) {
				traffic.Applied(ctx)
				// Only the identities whose counters the run itself began
				// are the run's: one that held counts before is left alone.
				own, kept := d.ownIdentities()
				if kept > 0 {
					d.note("%s at %s left %d identities' keys alone: their counters held counts before the run (a previous run's, or a real user's)", f.Action, f.At, kept)
				}
				res, err := deploy.ResetIdentities(ctx, d.client, d.schema, own)
				if err != nil {
					d.unapplied(f, err)
				} else if len(res.LeftAlone) > 0 {
					d.note("%s at %s left %d keys alone that did not hold what the %s layout writes", f.Action, f.At, len(res.LeftAlone), d.schema.Name)
				}
			}})
		case design.FaultRedisDown, design.FaultRedisLatency:
			if tox == nil {
				var err error
				if tox, err = openToxiproxy(ctx, b, d.s, tp); err != nil {
					return err
				}
			}
			c := tox
			b.Hooks = append(b.Hooks, traffic.Hook{At: f.At, Name: f.Action, Holds: f.For > 0, Fn: func(ctx context.Context) {
				var undo toxiproxy.Undo
				var err error
				fault.Hold(ctx, f.For, func() {
					traffic.Applied(ctx)
					if f.Action == design.FaultRedisDown {
						undo, err = c.Down(ctx)
					} else {
						undo, err = c.Latency(ctx, f.Latency, 0)
					}
					if err != nil {
						d.unapplied(f, err)
					}
				}, func() {
					if undo != nil {
						_ = undo(context.WithoutCancel(ctx))
					}
				})
			}})
		}
	}
	return nil
}

// openToxiproxy checks, before any traffic, that the Toxiproxy tp names
// answers and has the proxy; every toxic rlctl adds is removed when the
// target closes, after an interrupt too.
func openToxiproxy(ctx context.Context, b *target.Built, s target.Spec, tp Toxiproxy) (*toxiproxy.Client, error) {
	c, err := toxiproxy.New(tp.API, tp.Proxy)
	if err != nil {
		return nil, fmt.Errorf("%s: target.toxiproxy: %w", s.Name, err)
	}
	if _, err := c.Check(ctx); err != nil {
		return nil, fmt.Errorf("%s: target.toxiproxy: %w", s.Name, err)
	}
	b.Defer(func() error { return c.Cleanup(context.Background()) })
	b.Notes = append(b.Notes, fmt.Sprintf("redis-down and redis-latency went through Toxiproxy %s (proxy %s): rlctl removed every toxic it added, and only those", tp.API, tp.Proxy))
	return c, nil
}

// wait sleeps for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// ownIdentities are the run identities whose counters were empty when the
// run began (the run's own), and how many others there are.
func (d *deployment) ownIdentities() (own []string, kept int) {
	for _, id := range d.ids {
		if n, ok := d.start.Get(id); ok && (n.Used != 0 || len(n.Keys) > 0) {
			kept++
			continue
		}
		own = append(own, id)
	}
	return own, kept
}

// unapplied records that fault f could not be carried out (score's
// faulted check).
func (d *deployment) unapplied(f scenario.Fault, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failed = append(d.failed, fmt.Sprintf("%s at %s could not be carried out: %v", f.Action, f.At, err))
}

func (d *deployment) note(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.notes = append(d.notes, fmt.Sprintf(format, args...))
}

// failover reads the counters, starts watching the election, asks the
// deployment to fail over (SENTINEL FAILOVER, or CLUSTER FAILOVER on the
// shards of the identities' counters), waits for the new primary to take
// a write, and reads the counters again, there.
func (d *deployment) failover(ctx context.Context, el *election) {
	var before *keyspace.Counts
	var keys []string
	if d.schema != nil {
		var err error
		if before, err = d.read(ctx); err != nil {
			d.note("counts_lost is not measured: the counters could not be read before the failover: %v", err)
		}
		keys = counterKeys(before, d.schema, d.ids)
	}
	opts := deploy.ObserveOptions{Limit: electionLimit}
	// The probe key is the run's own: in a namespace no other run or
	// application shares, and on a Cluster in the slot of the counter
	// watched.
	probe := target.Namespace(d.s.Redis) + "election-probe"
	if len(keys) > 0 {
		opts.Key = keys[0]
		opts.Probe = probe + ":{" + hashTag(keys[0]) + "}"
	} else if d.cfg.Mode() == redisconn.ModeSentinel {
		opts.Probe = probe
	}
	obs, err := deploy.Observe(ctx, d.cfg, opts)
	if err != nil {
		el.fail(err)
		return
	}
	defer obs.Stop()
	sending := func() {
		traffic.Applied(ctx)
		el.asked = time.Now()
	}
	if _, err := deploy.Failover(ctx, d.cfg, sending, keys...); err != nil {
		el.fail(err)
		return
	}
	// The counters are read again as soon as the new primary takes writes;
	// the watch goes on until the old one is demoted or the run ends.
	select {
	case <-obs.Took():
	case <-ctx.Done():
		el.ended = time.Now()
	}
	var after *keyspace.Counts
	if before != nil {
		after, err = d.read(ctx)
	}
	el.seen = obs.Wait()
	if before == nil {
		return
	}
	if err != nil {
		d.note("counts_lost is not measured: the counters could not be read on the new primary after the failover: %v", err)
		return
	}
	lost, compared := lostCounts(before, after)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !compared {
		d.notes = append(d.notes, fmt.Sprintf("counts_lost is not measured: the %s layout's counters are not counts that can be compared across the failover (a bucket's or GCRA's state refills by itself, or a window rolled over)", d.schema.Name))
		return
	}
	d.lostRead = true
	if d.lost == nil {
		d.lost = map[string]float64{}
	}
	for k, n := range lost {
		d.lost[k] += float64(n)
	}
}

// counterKeys are the keys the run identities' counters live under: those
// read, else the layout's exact keys.
func counterKeys(c *keyspace.Counts, s *keyspace.Schema, ids []string) []string {
	var keys []string
	if c != nil {
		for _, n := range c.Counts {
			if n.Key != "" {
				keys = append(keys, n.Key)
			}
		}
	}
	if len(keys) == 0 {
		for _, id := range ids {
			exact, _ := s.IdentityKeys(id)
			keys = append(keys, exact...)
		}
	}
	return keys
}

// hashTag is the part of key that picks its Cluster slot.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// lostCounts is, by identity, how much of its counter before the failover
// the counter after lacks, for counters that are counts (windows, logs)
// read from the same key both times: a window that rolled over in between
// was not lost, and a bucket's or GCRA's state refills by itself;
// compared says whether any identity's counter could be compared.
func lostCounts(before, after *keyspace.Counts) (lost map[string]int64, compared bool) {
	lost = map[string]int64{}
	for _, b := range before.Counts {
		if !b.Known || (b.Kind != keyspace.CountWindow && b.Kind != keyspace.CountLog) {
			continue
		}
		a, ok := after.Get(b.ID)
		if !ok || !a.Known || (a.Key != "" && a.Key != b.Key) {
			continue
		}
		compared = true
		if n := b.Used - a.Used; n > 0 {
			lost[b.ID] = n
		}
	}
	return lost, compared
}

// finish records each election into h, as a simulated run's is, reads the
// counters a last time and adds counts_lost and counter_drift.
func (d *deployment) finish(ctx context.Context, h *history.History, f *target.Finished) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f.Notes = append(f.Notes, d.notes...)
	f.Unapplied = append(f.Unapplied, d.failed...)
	for i, el := range d.elections {
		if i >= len(h.Meta.Faults) {
			continue
		}
		hf := &h.Meta.Faults[i]
		if el.err != nil {
			f.Unapplied = append(f.Unapplied, fmt.Sprintf("%s at %s could not be carried out: %v", hf.Action, hf.At.Round(time.Millisecond), el.err))
			continue
		}
		offset := func(t time.Time) time.Duration {
			if t.IsZero() {
				return 0
			}
			return max(t.Sub(h.Meta.Start), time.Nanosecond)
		}
		// A graceful failover leaves the old primary answering as one for a
		// while: the election began when it was asked for.
		hf.Stopped, hf.Answered = offset(el.asked), offset(el.seen.Answered)
		hf.Shard = el.seen.Old
		if el.asked.IsZero() {
			f.Unapplied = append(f.Unapplied, fmt.Sprintf("%s at %s was not carried out: the run ended first", hf.Action, hf.At.Round(time.Millisecond)))
			continue
		}
		if hf.Answered == 0 {
			f.Unapplied = append(f.Unapplied, fault.Unfinished(hf.Action, hf.At, el.asked, el.ended, electionLimit))
			continue
		}
		f.Notes = append(f.Notes, fmt.Sprintf("%s at %s: %s handed over to %s; the new primary took a write %s after the failover was asked for, and the deployment named it %s after",
			hf.Action, hf.At.Round(time.Millisecond), el.seen.Old, el.seen.New, el.seen.Answered.Sub(el.asked).Round(time.Millisecond), since(el.seen.Switched, el.asked)))
	}
	if d.lostRead {
		var total float64
		for _, n := range d.lost {
			total += n
		}
		f.Extra = addFigure(f.Extra, metric.CountsLost, total)
		f.CountsLostByIdentity = d.lost
	}
	if d.schema == nil {
		return
	}
	end, err := d.read(ctx)
	if err != nil {
		f.Notes = append(f.Notes, fmt.Sprintf("the gateways' counters could not be read after the run, so counter_drift is not measured: %v", err))
		return
	}
	drift, skipped := counterDrift(h, d.start, end, time.Now())
	f.Extra = addFigure(f.Extra, metric.CounterDrift, float64(drift))
	if skipped > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("counter_drift leaves out %d identities whose counter was not empty before the run (a previous run's counts, or a real user's)", skipped))
	}
}

func since(t, from time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(from).Round(time.Millisecond).String()
}

func addFigure(m map[string]float64, name string, v float64) map[string]float64 {
	if m == nil {
		m = map[string]float64{}
	}
	m[name] = v
	return m
}

// counterDrift is what the counters read at the end (at, on rlctl's clock)
// held beyond the admissions rlctl saw answered in the last W before it,
// summed over identities whose counter was empty at the start; skipped
// counts the others. An admission decided in that window was answered in
// it too, so the admissions counted are at least those the counter may
// hold, and the drift is a lower bound.
func counterDrift(h *history.History, start, end *keyspace.Counts, at time.Time) (drift int64, skipped int) {
	ids := h.Meta.Identities
	from := at.Add(-h.Meta.Limit.Window).Sub(h.Meta.Start)
	admitted := make([]int64, len(ids))
	_ = h.Chunks(func(c *history.History) error {
		for i := range c.Len() {
			if c.Outcome(i) == decision.Allowed && c.Received(i) >= from {
				if k := int(c.Identity(i)); k < len(admitted) {
					admitted[k]++
				}
			}
		}
		return nil
	})
	for k, id := range ids {
		if s, ok := start.Get(id); ok && s.Used != 0 {
			skipped++
			continue
		}
		if n, ok := end.Get(id); ok && n.Known && n.Used > admitted[k] {
			drift += n.Used - admitted[k]
		}
	}
	return drift, skipped
}
