package inject

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/traffic"
)

// figures are measured figures that live outside the history (Saved.Extra),
// written by fault hooks while traffic runs.
type figures struct {
	mu sync.Mutex
	m  map[string]float64
}

func (f *figures) add(name string, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]float64{}
	}
	f.m[name] += v
}

// runNotes are notes hooks add during the run.
type runNotes struct {
	mu sync.Mutex
	s  []string
}

func (n *runNotes) add(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.s = append(n.s, s)
}

func (n *runNotes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.s)
}

// into adds the figures to dst (allocated when nil) and returns it.
func (f *figures) into(dst map[string]float64) map[string]float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, v := range f.m {
		if dst == nil {
			dst = map[string]float64{}
		}
		dst[k] += v
	}
	return dst
}

// replicaWait bounds how long a run waits, before traffic, for the
// primary's replicas to acknowledge: a replica that just synced counts for
// WAIT only after its first acknowledgement, up to a second later.
const replicaWait = 5 * time.Second

// onlineReplicas is how many of the primary's replicas acknowledge, up to
// n: with fewer than n connected, those (at once); else those that
// acknowledge a write (redisconn.AckedReplicas), retried until n do or
// replicaWait passes.
func onlineReplicas(ctx context.Context, c redis.UniversalClient, n int) (int, error) {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	connected, _ := strconv.Atoi(redisconn.InfoField(info, "connected_slaves"))
	if connected < n {
		return connected, nil
	}
	deadline := time.Now().Add(replicaWait)
	for {
		k, err := redisconn.AckedReplicas(ctx, c, n, 100*time.Millisecond)
		if err != nil || k >= n || time.Now().After(deadline) {
			return k, err
		}
	}
}

// Replicate decides whether lc's replicate is real or emulated and clears
// it in lc when emulated; the note says which it was.
//
// WAIT needs replicas. On redis: spawn rlctl starts them beside the
// primary, so WAIT and its latency are real, and a failover promotes one
// for real. The embedded Redis has no replication, and a given Redis may
// have fewer replicas than asked: there the option is emulated rather than
// refused, so the built-in suite runs everywhere — no WAIT is sent (no
// latency cost is measured), and a staged failover promotes a stand-in
// that holds every count, which is what WAIT N guarantees for every
// admission it let through.
func Replicate(ctx context.Context, cfg *redisconn.Config, lc *limiter.Config) (note string, err error) {
	if lc.Replicate == 0 {
		return "", nil
	}
	wait := fmt.Sprintf("WAIT %d %dms", lc.Replicate, lc.ReplicateTimeout.Milliseconds())
	have := 0
	if !cfg.IsEmbedded() {
		c := cfg.NewClient()
		defer c.Close()
		have = -1
		var mu sync.Mutex
		err := keyspace.ForEachPrimary(ctx, c, func(ctx context.Context, n keyspace.Node) error {
			k, err := onlineReplicas(ctx, n.Client, lc.Replicate)
			if err != nil {
				return fmt.Errorf("WAIT on %s: %w", n.Addr, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if have < 0 || k < have {
				have = k
			}
			return nil
		})
		if err != nil {
			return "", exitcode.With(fmt.Errorf("replicate: count the primary's replicas that acknowledge: %w", err), exitcode.Unreachable)
		}
	}
	if have >= lc.Replicate {
		return fmt.Sprintf("replicate: every admission waited for %d of the primary's %d replicas to acknowledge its write (%s after the script, on the same connection); the latency figures include it", lc.Replicate, have, wait), nil
	}
	why := "the embedded Redis has no replication"
	if !cfg.IsEmbedded() {
		why = fmt.Sprintf("the primary has %d replicas that acknowledge writes, not %d", have, lc.Replicate)
	}
	note = fmt.Sprintf("replicate %d was emulated, not run: %s, so the gateways sent no %s (its latency is not in the figures: use redis: spawn for that), and a failover promoted a stand-in holding every count the primary had, as a replica that acknowledged every admission does", lc.Replicate, why, wait)
	lc.Replicate, lc.ReplicateTimeout = 0, 0
	return note, nil
}

// replicatedFailover is the failover fault of a run with replicate: the
// promoted server holds the counts. rlctl's own replicas are promoted for
// real; otherwise a stand-in gets a copy of the run's keys (or, on a given
// Redis, keeps them, only the connections are cut).
func (e *Faults) replicatedFailover(ctx context.Context, p *Plan, s Setup, proxy *fault.Proxy, admin redis.UniversalClient, i int, f scenario.Fault) error {
	switch {
	case s.Replicas != nil:
		d := s.Replicas
		old, next := d.Servers[0], d.Servers[1]
		after := redis.NewClient(&redis.Options{Addr: next.Addr, DisableIdentity: true})
		e.closers = append(e.closers, after.Close)
		e.Hooks = append(e.Hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: e.countLost(i, admin, after, func(ctx context.Context) {
			// Best effort: a failover that cannot be carried out shows in
			// the figures.
			if d.Promote(ctx, 1) != nil {
				return
			}
			proxy.SetUpstream(next.Addr)
			// The old primary rejoins as the new one's replica, as Sentinel
			// makes it, so WAIT has a replica again once it has synced.
			_ = admin.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(next.Port)).Err()
		})})
		e.Notes = append(e.Notes, fmt.Sprintf("failover: a real one: the replica %s was promoted (REPLICAOF NO ONE), the gateways were redirected to it, and the old primary %s became its replica", next.Addr, old.Addr))
	case redisconn.IsShared(s.Spec):
		e.Hooks = append(e.Hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: e.countLost(i, admin, admin, func(context.Context) {
			proxy.SetUpstream(proxy.Upstream())
		})})
		e.Notes = append(e.Notes, "failover: staged on the given Redis by cutting every connection; the run's keys stayed, as on a promoted replica that acknowledged every admission")
	default:
		after, addr, err := e.standIn(ctx, p, s)
		if err != nil {
			return err
		}
		e.Hooks = append(e.Hooks, traffic.Hook{At: f.At, Name: f.Action, Fn: e.countLost(i, admin, after, func(ctx context.Context) {
			// No admission may land between the copy and the switch: a
			// replica that acknowledged every admission has them all.
			proxy.SetDown(true)
			if err := copyKeys(ctx, s.Keys, admin, after); err != nil {
				e.said.add(fmt.Sprintf("failover: the stand-in's copy of the run's keys is incomplete (%v): what it lacks counts as lost, and the figures after the failover admit it again", err))
			}
			proxy.SetUpstream(addr)
			proxy.SetDown(false)
		})})
		e.Notes = append(e.Notes, "failover: the gateways' Redis was replaced by a stand-in for a replica that acknowledged every admission: a copy of the run's keys, TTLs included, taken at the failover")
	}
	return nil
}

// countLost wraps failover i (its index in the scenario's faults): it
// reads the design's counters on the old primary just before and on the
// new one just after (and keeps when, for the fault's Read), and adds
// what the new one lacks to counts_lost. Designs whose state is not a
// count (token bucket, GCRA) and targets of no design add nothing.
func (e *Faults) countLost(i int, before, after redis.UniversalClient, failover func(context.Context)) func(context.Context) {
	same := func() (redis.UniversalClient, func() error) { return before, func() error { return nil } }
	then := func() (redis.UniversalClient, func() error) { return after, func() error { return nil } }
	return e.countLostVia(i, same, then, failover)
}

// countLostVia is countLost with clients made when each reading is taken
// (and closed after it): a real failover's new primary is known only once
// the topology has elected it.
func (e *Faults) countLostVia(i int, before, after func() (redis.UniversalClient, func() error), failover func(context.Context)) func(context.Context) {
	pattern, zset, ok := counterOf(e.lc)
	if !ok {
		return failover
	}
	// The design's own key layout names each key's identity.
	layout, err := keyspace.NewRegistry(keyspace.Params{Prefix: e.lc.Prefix}).Lookup(e.lc.Algorithm)
	if err != nil {
		return failover // not a layout rlctl writes: nothing to count
	}
	// A gateway's clock may run up to skew ahead of Redis's: its now − W
	// trims that much later.
	window, skew := e.lc.Limit.Window, e.skew
	return func(ctx context.Context) {
		b, closeB := before()
		had, err := counters(ctx, b, pattern, zset)
		closeB()
		traffic.Applied(ctx)
		failover(ctx)
		if err != nil {
			e.said.add(fmt.Sprintf("counts_lost is not measured: the old primary's counters could not be read before the failover: %v", err))
			return
		}
		a, closeA := after()
		has, err := counters(ctx, a, pattern, zset)
		closeA()
		if err != nil {
			e.said.add(fmt.Sprintf("counts_lost is not measured: the new primary's counters could not be read after the failover: %v", err))
			return
		}
		e.reads[i] = has.at
		var total int64
		for k, n := range lost(had, has, window-skew) {
			total += n
			if p, ok := layout.Parse(k, ""); ok {
				e.lostByID.add(p.ID, float64(n))
			}
		}
		e.extra.add(metric.CountsLost, float64(total))
		e.countsNote.Do(func() {
			e.said.add("counts_lost was read from Redis: every counter of the run on the old primary just before the failover, against the new primary's just after (writes in the few milliseconds between the reading and the switch are not in it; a count whose window ended, or a sliding-log entry that aged out of the window, before the second reading is not counted as lost; so it is a lower bound, and on Sentinel, where the gateways keep writing to the old primary until their clients hear of the new one, the writes of that second are not in it: after_fault_ceiling shows them)")
		})
	}
}

// lost is how many of the counts held before the failover the new primary
// lacks, among those that still counted when it was read: a counter whose
// TTL may have run out by then (its window over), or a sliding log's
// entry that may have aged out of the window (and may since have been
// trimmed by a request on the new primary), was not lost to the failover.
// A log's entries are compared one by one, since new admissions after the
// switch would hide lost ones in a count.
//
// It returns the losses by key, keys that lost nothing left out.
func lost(had, has counts, window time.Duration) map[string]int64 {
	out := map[string]int64{}
	for k, v := range had.keys {
		// A log's key lives as long as its newest entry; its entries age
		// one by one, below.
		if v.entries == nil && !v.expires.IsZero() && !v.expires.After(has.at) {
			continue
		}
		var n int64
		if v.entries == nil {
			n = max(0, v.n-has.keys[k].n)
		} else {
			// The design trims entries scored at or before its now − W
			// (ms).
			cutoff := float64(has.now.Add(-window).UnixNano()) / 1e6
			for m, score := range v.entries {
				if _, ok := has.keys[k].entries[m]; !ok && score > cutoff {
					n++
				}
			}
		}
		if n > 0 {
			out[k] = n
		}
	}
	return out
}

// counterOf is the SCAN pattern of lc's counters and whether each is a
// string counter or a sorted set (the sliding log, one entry per
// admission), as its design's counter reader says; ok is false for a
// design whose state is not a count.
func counterOf(lc limiter.Config) (pattern string, zset, ok bool) {
	d, known := design.Lookup(lc.Algorithm)
	if !known || (d.Counter != design.StringCounter && d.Counter != design.LogCounter) {
		return "", false, false
	}
	return limiter.KeyPattern(lc), d.Counter == design.LogCounter, true
}

// counterTimeout bounds one reading of the counters, or one copy of them
// to a stand-in. Each has its own bound rather than the run's: a failover
// late in a run on a busy machine must still be carried out whole and
// measured after the traffic ends.
const counterTimeout = time.Second

// counts are the design's counters as read from one server.
type counts struct {
	keys map[string]counter
	// at is when the reading ended on rlctl's clock; now is the server's
	// TIME read after it (the clock a design with clock: redis trims by).
	at, now time.Time
}

// counter is one key as read: a string counter's value, or a sorted set's
// entries (member → score, ms) and their number; expires is the earliest
// its TTL could run out (zero: no TTL).
type counter struct {
	n       int64
	entries map[string]float64
	expires time.Time
}

// counters reads every key matching pattern, with its TTL: a string's
// integer value, or a sorted set's entries. A key gone meanwhile reads as
// 0.
func counters(ctx context.Context, c redis.UniversalClient, pattern string, zset bool) (counts, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), counterTimeout)
	defer cancel()
	var mu sync.Mutex
	out := counts{keys: map[string]counter{}}
	err := keyspace.ForEachPrimary(ctx, c, func(ctx context.Context, n keyspace.Node) error {
		return keyspace.ScanNode(ctx, n, pattern, func(keys []string) error {
			pipe := n.Client.Pipeline()
			vals := make([]func() counter, len(keys))
			sent := time.Now()
			for i, k := range keys {
				var read func() counter
				if zset {
					zs := pipe.ZRangeWithScores(ctx, k, 0, -1)
					read = func() counter {
						c := counter{entries: map[string]float64{}}
						for _, z := range zs.Val() {
							c.entries[fmt.Sprint(z.Member)] = z.Score
						}
						c.n = int64(len(c.entries))
						return c
					}
				} else {
					get := pipe.Get(ctx, k)
					read = func() counter { v, _ := get.Int64(); return counter{n: v} }
				}
				ttl := pipe.PTTL(ctx, k)
				vals[i] = func() counter {
					c := read()
					if d := ttl.Val(); d > 0 {
						c.expires = sent.Add(d)
					}
					return c
				}
			}
			_, _ = pipe.Exec(ctx)
			mu.Lock()
			defer mu.Unlock()
			for i, v := range vals {
				out.keys[keys[i]] = v()
			}
			return nil
		})
	})
	if err != nil {
		return out, err
	}
	out.at = time.Now()
	out.now = out.at
	if t, err := c.Time(ctx).Result(); err == nil {
		out.now = t
	}
	return out, nil
}

// copyKeys writes every key matching k from one standalone server to
// another, with its remaining TTL: strings, sorted sets and hashes, the
// types the designs write. It stands in for replication where there is
// none.
func copyKeys(ctx context.Context, k keyspace.Patterns, from, to redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), counterTimeout)
	defer cancel()
	for _, glob := range k {
		err := keyspace.ScanNode(ctx, keyspace.Node{Client: from}, glob, func(keys []string) error {
			for _, key := range keys {
				if err := copyKey(ctx, from, to, key); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func copyKey(ctx context.Context, from, to redis.UniversalClient, key string) error {
	typ, err := from.Type(ctx, key).Result()
	if err != nil {
		return err
	}
	ttl, err := from.PTTL(ctx, key).Result()
	if err != nil || ttl == -2 { // -2: gone meanwhile
		return err
	}
	pipe := to.TxPipeline()
	switch typ {
	case "string":
		v, err := from.Get(ctx, key).Result()
		if err != nil {
			return nil // gone meanwhile
		}
		pipe.Set(ctx, key, v, 0)
	case "zset":
		zs, err := from.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil || len(zs) == 0 {
			return err
		}
		pipe.ZAdd(ctx, key, zs...)
	case "hash":
		fv, err := from.HGetAll(ctx, key).Result()
		if err != nil || len(fv) == 0 {
			return err
		}
		pipe.HSet(ctx, key, fv)
	default:
		return nil
	}
	if ttl > 0 {
		pipe.PExpire(ctx, key, ttl)
	}
	_, err = pipe.Exec(ctx)
	return err
}
