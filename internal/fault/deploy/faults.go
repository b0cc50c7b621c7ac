package deploy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redisconn"
)

// sentinelFailoverWait bounds how long Failover retries a Sentinel that
// has no replica it considers good yet (NOGOODSLAVE).
const sentinelFailoverWait = 5 * time.Second

// Failover starts a failover of the deployment cfg names and returns the
// shards as they were just before it, for Observe and the report: on a
// Sentinel deployment SENTINEL FAILOVER of its master (keys are not
// needed), on a Cluster CLUSTER FAILOVER on a replica in sync (see
// redisconn.InSyncReplica) of every shard that holds one of keys (a
// graceful one: the replica has its primary pause writers until it has
// every write). sending, when not nil, is called once, just before the
// first failover command goes out, after the checks that may wait. It
// returns once the failover was accepted; the election itself happens
// after (Observe). A standalone server has nothing to fail over to: Usage.
//
// Call it only after the user's --allow-failover was checked.
func Failover(ctx context.Context, cfg *redisconn.Config, sending func(), keys ...string) ([]redisconn.Shard, error) {
	if sending == nil {
		sending = func() {}
	}
	switch cfg.Mode() {
	case redisconn.ModeSentinel:
		sh, err := cfg.SentinelShard(ctx)
		if err != nil {
			return nil, exitcode.With(fmt.Errorf("failover: %w", err), exitcode.Unreachable)
		}
		if len(sh.Replicas) == 0 {
			return nil, exitcode.Errorf(exitcode.Usage, "failover: the Sentinels' master %s (%s) has no replica to promote", cfg.Target().MasterName, sh.Primary)
		}
		fctx, cancel := context.WithTimeout(ctx, sentinelFailoverWait)
		defer cancel()
		sending()
		if err := cfg.SentinelFailover(fctx); err != nil {
			return nil, fmt.Errorf("failover: %w", err)
		}
		return []redisconn.Shard{sh}, nil
	case redisconn.ModeCluster:
		if len(keys) == 0 {
			return nil, exitcode.Errorf(exitcode.Usage, "failover on a Cluster: name a key, so the shard holding it is the one failed over")
		}
		shards, err := shardsOf(ctx, cfg, keys)
		if err != nil {
			return nil, err
		}
		replicas := make([]string, len(shards))
		for i, sh := range shards {
			if len(sh.Replicas) == 0 {
				return nil, exitcode.Errorf(exitcode.Usage, "failover: the Cluster shard of %s has no replica to promote", sh.Primary)
			}
			if replicas[i], err = cfg.InSyncReplica(ctx, sh, redisconn.ReplicaSyncWait); err != nil {
				return nil, fmt.Errorf("failover: %w", err)
			}
		}
		sending()
		for i, sh := range shards {
			c := cfg.NodeClient(replicas[i], false)
			err := c.Do(ctx, "CLUSTER", "FAILOVER").Err()
			c.Close()
			if err != nil {
				return nil, fmt.Errorf("failover: CLUSTER FAILOVER on %s (replica of %s): %w", replicas[i], sh.Primary, err)
			}
		}
		return shards, nil
	}
	return nil, exitcode.Errorf(exitcode.Usage, "failover: %s is one server; a failover needs a Sentinel (redis+sentinel://) or Cluster (redis+cluster://) deployment", cfg)
}

// shardsOf lists the distinct Cluster shards holding keys, in the order
// the keys name them.
func shardsOf(ctx context.Context, cfg *redisconn.Config, keys []string) ([]redisconn.Shard, error) {
	var out []redisconn.Shard
	seen := map[string]bool{}
	for _, k := range keys {
		sh, err := cfg.ClusterShard(ctx, k)
		if err != nil {
			return nil, exitcode.With(fmt.Errorf("failover: %w", err), exitcode.Unreachable)
		}
		if !seen[sh.ID] {
			seen[sh.ID] = true
			out = append(out, sh)
		}
	}
	return out, nil
}

// StallMode says what a stall holds back.
type StallMode string

// The modes of CLIENT PAUSE.
const (
	// StallWrite holds back writes (and scripts that may write): the
	// gateways' decisions wait, their reads still answer.
	StallWrite StallMode = "WRITE"
	// StallAll holds back every command of every client but replicas.
	// Sentinel's own pings wait too: a stall longer than its
	// down-after-milliseconds makes it fail the primary over.
	StallAll StallMode = "ALL"
)

// Undo takes a fault back before it would end by itself.
type Undo func(ctx context.Context) error

// Stall pauses every primary c writes to (the one server, the Sentinels'
// master, every Cluster master) for d with CLIENT PAUSE <ms> WRITE|ALL: a
// server-side stall every gateway feels. It refuses, before pausing any,
// a server older than Redis 6.2 (CLIENT PAUSE WRITE and CLIENT UNPAUSE
// came then). The pause ends by itself after d. For StallWrite the Undo
// ends it early with CLIENT UNPAUSE (which also ends a pause someone else
// set, so it is meant for an interrupted run); under StallAll Redis holds
// back CLIENT UNPAUSE too, so there the Undo only says when the pause
// ends: keep ALL stalls short.
//
// Call it only after the user's --allow-faults was checked.
func Stall(ctx context.Context, c redis.UniversalClient, d time.Duration, mode StallMode) (Undo, error) {
	if mode != StallWrite && mode != StallAll {
		return nil, exitcode.Errorf(exitcode.Usage, "redis-stall mode %q: want WRITE or ALL", mode)
	}
	if d < time.Millisecond {
		return nil, exitcode.Errorf(exitcode.Usage, "redis-stall for %s: want at least 1ms", d)
	}
	nodes, err := stallable(ctx, c)
	if err != nil {
		return nil, err
	}
	ms := strconv.FormatInt(d.Milliseconds(), 10)
	var errs []error
	for _, n := range nodes {
		if err := n.Client.Do(ctx, "CLIENT", "PAUSE", ms, string(mode)).Err(); err != nil {
			errs = append(errs, fmt.Errorf("CLIENT PAUSE on %s: %w", nodeName(n), err))
		}
	}
	until := time.Now().Add(d)
	undo := func(ctx context.Context) error {
		if mode == StallAll {
			// Redis postpones CLIENT UNPAUSE itself under a pause of ALL.
			return fmt.Errorf("redis-stall: a CLIENT PAUSE ALL cannot be ended early; it ends by itself at %s", until.Format(time.RFC3339))
		}
		var errs []error
		for _, n := range nodes {
			if err := n.Client.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
				errs = append(errs, fmt.Errorf("CLIENT UNPAUSE on %s: %w", nodeName(n), err))
			}
		}
		return errors.Join(errs...)
	}
	if err := errors.Join(errs...); err != nil {
		// Paused where it could be: the undo still ends those early.
		return undo, fmt.Errorf("redis-stall: %w", err)
	}
	return undo, nil
}

// CheckStall says, before any traffic, why a redis-stall cannot run on
// the deployment c reaches (a primary older than Redis 6.2, or one that
// does not answer), nil when it can. It writes nothing.
func CheckStall(ctx context.Context, c redis.UniversalClient) error {
	_, err := stallable(ctx, c)
	return err
}

// stallable lists every primary c writes to, refusing any older than 6.2.
func stallable(ctx context.Context, c redis.UniversalClient) ([]keyspace.Node, error) {
	var mu sync.Mutex
	var nodes []keyspace.Node
	err := keyspace.ForEachPrimary(ctx, c, func(ctx context.Context, n keyspace.Node) error {
		info, err := n.Client.Info(ctx, "server").Result()
		if err != nil {
			return exitcode.With(fmt.Errorf("redis-stall: read the version of %s: %w", nodeName(n), err), exitcode.Unreachable)
		}
		v := redisconn.InfoField(info, "redis_version")
		if !atLeast(v, 6, 2) {
			return exitcode.Errorf(exitcode.Usage, "redis-stall: %s runs Redis %s; the stall needs 6.2 or newer (CLIENT PAUSE WRITE, CLIENT UNPAUSE)", nodeName(n), orUnknown(v))
		}
		mu.Lock()
		nodes = append(nodes, n)
		mu.Unlock()
		return nil
	})
	return nodes, err
}

func nodeName(n keyspace.Node) string {
	if n.Addr == "" {
		return "the primary"
	}
	return n.Addr
}

func orUnknown(v string) string {
	if v == "" {
		return "of unknown version"
	}
	return v
}

// atLeast reports whether the Redis version v (INFO's redis_version,
// "7.0.15") is major.minor or newer; an unreadable one is not.
func atLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// ResetKeys deletes exactly the named keys that schema claims and whose
// values are what its layout writes (keyspace.Reset: checked and deleted
// in one script per hash slot); a key of that name holding anything else
// is another application's and is left alone, listed in LeftAlone.
//
// Call it only where the keys are the run's own identities' (redis-reset).
func ResetKeys(ctx context.Context, c redis.UniversalClient, schema *keyspace.Schema, keys []string) (keyspace.ResetResult, error) {
	now, err := keyspace.ServerTime(ctx, c)
	if err != nil {
		return keyspace.ResetResult{}, fmt.Errorf("redis-reset: %w", err)
	}
	read, err := keyspace.ReadKeys(ctx, c, []*keyspace.Schema{schema}, keys, now)
	if err != nil {
		return keyspace.ResetResult{}, fmt.Errorf("redis-reset: %w", err)
	}
	res, err := keyspace.Reset(ctx, c, read, false)
	if err != nil {
		return res, fmt.Errorf("redis-reset: %w", err)
	}
	return res, nil
}

// ResetIdentities deletes the keys schema's layout keeps for each of ids
// (found as keyspace.ReadCounts finds them), through ResetKeys.
//
// Call it only with the run's own identities (redis-reset).
func ResetIdentities(ctx context.Context, c redis.UniversalClient, schema *keyspace.Schema, ids []string) (keyspace.ResetResult, error) {
	counts, err := keyspace.ReadCounts(ctx, c, schema, ids)
	if err != nil {
		return keyspace.ResetResult{}, fmt.Errorf("redis-reset: %w", err)
	}
	var keys []string
	for _, n := range counts.Counts {
		keys = append(keys, n.Keys...)
	}
	return ResetKeys(ctx, c, schema, keys)
}
