package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/target/scripttarget"
)

// sharedRedis reports whether spec names a Redis rlctl did not start (a
// URL: staging, production), where a run must write and delete only keys
// of its own.
func sharedRedis(spec string) bool {
	return spec != redisconn.SpecEmbedded && !redisconn.IsSpawnSpec(spec)
}

// newNamespace returns a key namespace no other run shares:
// "rlctl-3f9a2c1e:".
func newNamespace() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "rlctl-" + hex.EncodeToString(b[:]) + ":"
}

// runKeys are the keys a run writes, as SCAN patterns: what a redis-reset
// fault or a staged failover deletes, and what is deleted after a run on a
// shared Redis. Nothing outside them is ever deleted.
type runKeys []string

// prefixKeys is every key under prefix.
func prefixKeys(prefix string) runKeys {
	return runKeys{keyspace.EscapeGlob(prefix) + "*"}
}

// scriptKeys namespaces a redis-script target's key templates (when ns is
// set) and returns them with the patterns of the keys they render.
func scriptKeys(templates []string, ns string) ([]string, runKeys, error) {
	out := make([]string, len(templates))
	var keys runKeys
	for i, tpl := range templates {
		nsTpl, fixed, exact, err := scripttarget.NamespaceTemplate(tpl, ns)
		if err != nil {
			return nil, nil, err
		}
		out[i] = tpl
		if ns != "" {
			out[i] = nsTpl
		}
		if exact {
			keys = append(keys, keyspace.EscapeGlob(fixed))
		} else {
			keys = append(keys, keyspace.EscapeGlob(fixed)+"*")
		}
	}
	return out, keys, nil
}

// delete removes every key matching the patterns (SCAN, never KEYS; every
// primary of a Cluster) and returns how many went.
func (k runKeys) delete(ctx context.Context, c redis.UniversalClient) (int64, error) {
	var n int64
	for _, glob := range k {
		err := keyspace.ForEachPrimary(ctx, c, func(ctx context.Context, node keyspace.Node) error {
			return keyspace.ScanNode(ctx, node, glob, func(keys []string) error {
				d, err := keyspace.Delete(ctx, node.Client, keys)
				n += d
				return err
			})
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// cleanupTimeout bounds the deletion of a run's keys from a shared Redis.
const cleanupTimeout = 10 * time.Second

// cleanup deletes the run's keys from a shared Redis once the run is over.
// Keys left behind (a timeout) expire by their own TTLs.
func cleanup(cfg *redisconn.Config, keys runKeys) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		c := cfg.NewClient()
		defer c.Close()
		if _, err := keys.delete(ctx, c); err != nil {
			return fmt.Errorf("delete the run's keys: %w", err)
		}
		return nil
	}
}
