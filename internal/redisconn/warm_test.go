package redisconn_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// connectedTo counts the connections a server holds, besides admin's own.
func connectedTo(t *testing.T, admin *redis.Client) int { return redistest.Connections(t, admin) - 1 }

func TestWarmOpensUpToPoolSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 5})
	defer c.Close()
	if err := redisconn.Warm(ctx, c, 3); err != nil {
		t.Fatalf("Warm(3): %v", err)
	}
	if n, idle := connectedTo(t, admin), c.PoolStats().IdleConns; n != 3 || idle != 3 {
		t.Fatalf("after Warm(3): %d connected, %d idle in the pool; want 3 and 3", n, idle)
	}
	if err := redisconn.Warm(ctx, c, 50); err != nil {
		t.Fatalf("Warm(50): %v", err)
	}
	if n := connectedTo(t, admin); n != 5 {
		t.Fatalf("after Warm(50) on a pool of 5: %d connected, want 5", n)
	}
}

func TestWarmOpensOnEveryClusterMaster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs, PoolSize: 8})
	defer c.Close()
	before := make([]int, len(cl.Addrs))
	admins := make([]*redis.Client, len(cl.Addrs))
	for i, addr := range cl.Addrs {
		admins[i] = redis.NewClient(&redis.Options{Addr: addr})
		defer admins[i].Close()
		before[i] = connectedTo(t, admins[i])
	}
	if err := redisconn.Warm(ctx, c, 4); err != nil {
		t.Fatalf("Warm(4): %v", err)
	}
	for i, a := range admins {
		// The cluster client may also hold a connection it used to learn
		// the slots; Warm adds its 4 to whatever was open.
		if n := connectedTo(t, a); n < 4 || n > before[i]+4 {
			t.Errorf("master %s: %d connected after Warm(4) (%d before), want at least 4", cl.Addrs[i], n, before[i])
		}
	}
}
