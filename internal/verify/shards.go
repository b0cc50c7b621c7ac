package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
)

// unmet says in one line why sc cannot mean anything on the Redis spec
// names, "" when it can: a scenario that requires a Redis Cluster is
// skipped up front anywhere else, not run to look like a pass.
func unmet(sc *scenario.Scenario, spec string) string {
	if sc.Requires != scenario.RequireCluster {
		return ""
	}
	spec = strings.TrimSpace(spec)
	if spec == redisconn.SpecSpawnCluster {
		return ""
	}
	if t, err := redisconn.ParseURL(spec); err == nil && t.Mode == redisconn.ModeCluster {
		return ""
	}
	if spec == "" {
		spec = redisconn.SpecEmbedded
	}
	return fmt.Sprintf("needs a Redis Cluster (this run's Redis is %s): run with --redis spawn-cluster", redisconn.Redact(spec))
}

// shardMap is what the run needs to name the shard of each identity's
// keys: which primary served each slot when the run started, and the key
// an identity's state lives under (every key of one identity shares its
// slot: the designs tag them with {identity}).
type shardMap struct {
	owners redisconn.SlotOwners
	key    func(id string) (string, error)
}

// readShards reads, before the run, which primary serves each slot of a
// Cluster, so the history can say which shard held each identity's keys
// (history.Meta.Shards). Outside a Cluster, or when the limit is keyed on
// source addresses rather than identities, there is nothing to read; a
// Cluster that will not tell leaves a note, and the per-shard figures
// absent.
func (e *env) readShards(ctx context.Context, sc *scenario.Scenario, cfg *redisconn.Config, key func(id string) (string, error)) {
	if cfg.Mode() != redisconn.ModeCluster || sc.Target.Key == scenario.KeySource {
		return
	}
	owners, err := cfg.ClusterSlotOwners(ctx)
	if err != nil {
		e.notes = append(e.notes, fmt.Sprintf("the identities' Cluster shards could not be read, so the figures are not split by shard: %v", err))
		return
	}
	e.shards = &shardMap{owners: owners, key: key}
}

// of names, for each identity, the shard (its primary's address when the
// run started) that held its keys; "" where the key could not be built.
func (m *shardMap) of(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if k, err := m.key(id); err == nil {
			out[i] = m.owners.Owner(keyspace.Slot(k))
		}
	}
	return out
}
