package target

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/fault/inject"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/traffic"
)

// Namespace returns a key namespace of the run's own on a shared Redis
// ("rlctl-3f9a2c1e:"), and "" on one rlctl started (embedded, spawn),
// where every key is the run's.
func Namespace(spec string) string {
	if !redisconn.IsShared(spec) {
		return ""
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "rlctl-" + hex.EncodeToString(b[:]) + ":"
}

// PrefixKeys is every key under prefix.
func PrefixKeys(prefix string) keyspace.Patterns {
	return keyspace.Patterns{keyspace.EscapeGlob(prefix) + "*"}
}

// Own records the keys the run writes in namespace ns: on a shared Redis
// they are deleted once the run is over, and the notes say where they
// were. With ns "" (a Redis rlctl started) there is nothing to do.
func (b *Built) Own(cfg *redisconn.Config, keys keyspace.Patterns, ns string) {
	if ns == "" {
		return
	}
	b.Defer(Cleanup(cfg, keys))
	b.Notes = append(b.Notes, fmt.Sprintf("on the given Redis every key of this run lay in a namespace of its own (%s), deleted after the run: nothing else was written or deleted", strings.Join(keys, ", ")))
}

// cleanupTimeout bounds the deletion of a run's keys from a shared Redis.
const cleanupTimeout = 10 * time.Second

// Cleanup deletes the run's keys from a shared Redis once the run is over.
// Keys left behind (a timeout) expire by their own TTLs.
func Cleanup(cfg *redisconn.Config, keys keyspace.Patterns) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		c := cfg.NewClient()
		defer c.Close()
		if _, err := keys.Delete(ctx, c); err != nil {
			return fmt.Errorf("delete the run's keys: %w", err)
		}
		return nil
	}
}

// OpenRedis opens the Redis s names; with replica, spawn starts a primary
// with one replica (for a real failover).
func OpenRedis(ctx context.Context, s Spec, replica bool) (*redisconn.Config, func() error, error) {
	replicas := 0
	if replica {
		replicas = 1
	}
	return redisconn.OpenChecked(ctx, s.Redis, s.RedisOptions, replicas)
}

// WithFaults sets up s's faults on the run's Redis (inject.New) and
// returns the client constructor the gateways must use; once the traffic
// is over, the elections the faults saw go into the history and what they
// measured into the finished figures.
func (b *Built) WithFaults(ctx context.Context, s Spec, setup inject.Setup) (func() redis.UniversalClient, error) {
	f, err := inject.New(ctx, s.FaultPlan(), setup)
	if err != nil {
		return nil, err
	}
	b.Defer(f.Close)
	b.Hooks = append(b.Hooks, f.Hooks...)
	b.Notes = append(b.Notes, f.Notes...)
	b.OnFinish(func(_ context.Context, h *history.History, fin *Finished) {
		notes, unapplied := f.RecordElections(h)
		fin.Notes = append(fin.Notes, notes...)
		fin.Notes = append(fin.Notes, f.RunNotes()...)
		fin.Unapplied = append(fin.Unapplied, unapplied...)
		fin.Extra = f.Extra(fin.Extra)
		fin.CountsLostByIdentity = f.CountsLostByIdentity()
	})
	return f.NewClient, nil
}

// RecordShards reads, before the run, which primary serves each slot of a
// Cluster, and once the run is over names in the history the shard that
// held each identity's keys (history.Meta.Shards), key giving the key an
// identity's state lives under (every key of one identity shares its
// slot). Outside a Cluster, or when the limit is keyed on source
// addresses rather than identities, there is nothing to read; a Cluster
// that will not tell leaves a note, and the per-shard figures absent.
func (b *Built) RecordShards(ctx context.Context, s Spec, cfg *redisconn.Config, key func(id string) (string, error)) {
	if cfg.Mode() != redisconn.ModeCluster || s.Target.Key == scenario.KeySource {
		return
	}
	owners, err := cfg.ClusterSlotOwners(ctx)
	if err != nil {
		b.Notes = append(b.Notes, fmt.Sprintf("the identities' Cluster shards could not be read, so the figures are not split by shard: %v", err))
		return
	}
	b.OnFinish(func(_ context.Context, h *history.History, _ *Finished) {
		ids := h.Meta.Identities
		shards := make([]string, len(ids))
		for i, id := range ids {
			if k, err := key(id); err == nil {
				shards[i] = owners.Owner(keyspace.Slot(k))
			}
		}
		h.Meta.Shards = shards
	})
}

// KeyBySource makes the target key its limit on the identities' source
// addresses when the scenario says so (target.key: source), and says so.
func (b *Built) KeyBySource(s Spec) {
	if s.Target.Key != scenario.KeySource {
		return
	}
	n := s.Target.Sources
	b.Target = traffic.KeyedBySource(b.Target, n)
	who := fmt.Sprintf("%d identities from %d source addresses", s.Identities, n)
	if n == 1 {
		who = fmt.Sprintf("all %d identities from one source address", s.Identities)
	}
	b.Notes = append(b.Notes, fmt.Sprintf("the limit is keyed on the client's address, not the identity: %s, identity i from address i mod %d, so identities sharing an address share one limit", who, n))
}

// Clock is a clock every machine of a shared run can read: the target's
// Redis (TIME), else an HTTP gateway's (its decision time, else its Date).
// Merge puts each machine's history on this clock's time line.
type Clock struct {
	Name string
	// Read returns the reference's time, and its resolution: a reading r
	// means a time in [r, r+resolution).
	Read func(ctx context.Context) (t time.Time, resolution time.Duration, err error)
}

// redisTime is the name of a Redis's clock (RedisClock).
const redisTime = "redis TIME"

// RedisClock reads Redis TIME (to the microsecond). Reading it writes
// nothing.
func RedisClock(cfg *redisconn.Config) *Clock {
	return &Clock{Name: redisTime, Read: func(ctx context.Context) (time.Time, time.Duration, error) {
		c := cfg.NewClient()
		defer c.Close()
		t, err := c.Time(ctx).Result()
		return t, time.Microsecond, err
	}}
}
