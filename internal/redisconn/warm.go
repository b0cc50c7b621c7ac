package redisconn

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Warm opens up to n connections in c's pool (on every primary of a
// Cluster), at most the pool's size, so requests that come at once find
// them open instead of dialing inside the requests a run measures. It
// stops at the first error.
func Warm(ctx context.Context, c redis.UniversalClient, n int) error {
	switch c := c.(type) {
	case *redis.Client:
		return warmClient(ctx, c, n)
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return warmClient(ctx, node, n)
		})
	}
	return nil
}

// warmClient holds n connections of c at once, each answering a PING, and
// then gives them all back to the pool, which keeps them open.
func warmClient(ctx context.Context, c *redis.Client, n int) error {
	n = min(n, c.Options().PoolSize)
	conns := make([]*redis.Conn, 0, n)
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	for range n {
		cn := c.Conn()
		conns = append(conns, cn)
		if err := cn.Ping(ctx).Err(); err != nil {
			return err
		}
	}
	return nil
}
