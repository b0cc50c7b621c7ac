package keyspace

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Patterns are SCAN patterns naming a set of keys, such as the keys one
// verify run writes: what its redis-reset fault or a staged failover
// deletes, and what is deleted after a run on a shared Redis. Nothing
// outside them is ever deleted.
type Patterns []string

// Delete removes every key matching the patterns (SCAN, never KEYS; every
// primary of a Cluster) and returns how many went.
func (p Patterns) Delete(ctx context.Context, c redis.UniversalClient) (int64, error) {
	var n int64
	for _, glob := range p {
		err := ForEachPrimary(ctx, c, func(ctx context.Context, node Node) error {
			return ScanNode(ctx, node, glob, func(keys []string) error {
				d, err := Delete(ctx, node.Client, keys)
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
