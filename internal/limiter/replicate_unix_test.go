//go:build unix

package limiter

import (
	"context"
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// replicated starts a primary with one replica and returns clients for
// both and the replica's process id.
func replicated(t *testing.T) (primary, replica *redis.Client, replicaPid int) {
	t.Helper()
	d := redistest.Spawn(t, redisconn.SpawnOptions{Replicas: 1})
	primary = redis.NewClient(&redis.Options{Addr: d.Servers[0].Addr, DisableIdentity: true})
	replica = redis.NewClient(&redis.Options{Addr: d.Servers[1].Addr, DisableIdentity: true})
	t.Cleanup(func() { primary.Close(); replica.Close() })
	return primary, replica, d.Servers[1].Pid
}

// pause stops the process with SIGSTOP until the returned function (also
// run when the test ends) sends SIGCONT.
func pause(t *testing.T, pid int) (resume func()) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP replica %d: %v", pid, err)
	}
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	return resume
}

// replicate: 1 on a real primary with a real replica, through both
// clients a Lua design can use (the hotpath pool on a single server, and a
// go-redis pipeline where the pool cannot mirror the client, as on a
// Cluster): every admission is on the replica by the time it is answered;
// with the replica stopped, WAIT times out, an admission becomes
// ErrNotReplicated, which on_error closed refuses and open admits, while a
// denial stands; once the replica runs again it holds every count.
func TestReplicateWaitsForReplica(t *testing.T) {
	t.Parallel()
	primary, replica, pid := replicated(t)
	ctx := context.Background()
	// An OnConnect hook cannot be mirrored by the hotpath pool, so the
	// limiter keeps go-redis (the Cluster path).
	hooked := redis.NewClient(&redis.Options{Addr: primary.Options().Addr, DisableIdentity: true,
		OnConnect: func(context.Context, *redis.Conn) error { return nil }})
	t.Cleanup(func() { hooked.Close() })
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
	}{
		{"hotpath pool", primary},
		{"go-redis pipeline", hooked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Algorithm: design.RedisFixedWindow, Limit: rate.Limit{Count: 5, Window: time.Minute},
				Prefix: "rl:" + strconv.Itoa(len(tc.name)) + ":", Replicate: 1, ReplicateTimeout: 20 * time.Millisecond}
			l := mustNew(t, cfg, tc.client, nil)
			key := Keys(cfg, "ann", time.Now())[0]
			for n := 1; n <= 3; n++ {
				d, err := l.Allow(ctx, "ann", 1)
				if err != nil || !d.Allowed || d.By != decision.ByRedis {
					t.Fatalf("admission %d with the replica up: %+v, %v", n, d, err)
				}
				// Answered only once acknowledged: the replica has it now.
				if got, err := replica.Get(ctx, key).Int(); err != nil || got != n {
					t.Fatalf("after admission %d the replica holds %d (%v), want %d", n, got, err, n)
				}
			}

			resume := pause(t, pid)
			if _, err := l.Allow(ctx, "ann", 1); !errors.Is(err, ErrNotReplicated) {
				t.Fatalf("admission with the replica stopped: %v, want ErrNotReplicated", err)
			}
			closed := WithPolicy(l, Policy{OnError: OnErrorClosed, Timeout: time.Second}, cfg.Limit)
			if d, err := closed.Allow(ctx, "ann", 1); err != nil || d.Allowed || d.By != decision.ByFailClosed {
				t.Fatalf("on_error closed with the replica stopped: %+v, %v; want refused by fail-closed", d, err)
			}
			// The primary counted both (5 of 5): the next is the script's
			// own denial, which stands unacknowledged.
			if d, err := l.Allow(ctx, "ann", 1); err != nil || d.Allowed || d.By != decision.ByRedis {
				t.Fatalf("over the limit with the replica stopped: %+v, %v; want the script's denial", d, err)
			}
			open := WithPolicy(l, Policy{OnError: OnErrorOpen, Timeout: time.Second}, cfg.Limit)
			if d, err := open.Allow(ctx, "bob", 1); err != nil || !d.Allowed || d.By != decision.ByFailOpen {
				t.Fatalf("on_error open with the replica stopped: %+v, %v; want admitted by fail-open", d, err)
			}
			resume()
			if d, err := l.Allow(ctx, "bob", 1); err != nil || !d.Allowed {
				t.Fatalf("admission after the replica resumed: %+v, %v", d, err)
			}
			if got, err := replica.Get(ctx, key).Int(); err != nil || got != 5 {
				t.Errorf("the replica holds %d (%v) for ann after resuming, want the primary's 5", got, err)
			}
		})
	}
}

// On a Cluster the script and its WAIT go in one pipeline to the primary
// that owns the identity's slot: whatever the slot, the count lands there
// (no MOVED) and WAIT answers, here 0 of the 1 replica asked for, since
// the Cluster has none: ErrNotReplicated.
func TestReplicateOnClusterWaitsOnTheSlotsPrimary(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	cfg := Config{Algorithm: design.RedisFixedWindow, Limit: rate.Limit{Count: 5, Window: time.Minute}, Replicate: 1, ReplicateTimeout: 5 * time.Millisecond}
	l := mustNew(t, cfg, c, nil)
	ctx := context.Background()
	for _, id := range []string{"ann", "bob", "cy", "dee", "eve", "fay"} {
		if _, err := l.Allow(ctx, id, 1); !errors.Is(err, ErrNotReplicated) {
			t.Errorf("%s: %v, want ErrNotReplicated from its slot's primary", id, err)
		}
		if n, err := c.Get(ctx, Keys(cfg, id, time.Now())[0]).Int(); err != nil || n != 1 {
			t.Errorf("%s: its primary counted %d (%v), want 1", id, n, err)
		}
	}
}
