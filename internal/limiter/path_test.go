package limiter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/hotpath"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

var luaDesigns = []string{design.RedisFixedWindow, design.RedisFixedWindowRefresh, design.RedisClockWindow,
	design.RedisTokenBucket, design.RedisSlidingWindow, design.RedisSlidingLog, design.RedisGCRA}

// TestDecisionPathsAgree: on a single server the Lua designs decide through
// the hotpath pool, on a Cluster through go-redis. The two must send the same
// arguments and read the same reply: the same request sequence, at the same
// gateway-clock instants, gets the same decisions through both (each path
// on its own key prefix of one real server). Tests elsewhere run the
// designs through New, so on the hotpath pool.
func TestDecisionPathsAgree(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client(t)
	limit := rate.Limit{Count: 4, Window: time.Minute}
	for _, algo := range luaDesigns {
		t.Run(algo, func(t *testing.T) {
			clock := newFakeClock(epoch)
			paths := map[string]Limiter{}
			for _, path := range []string{"hotpath", "go-redis"} {
				l, err := newScriptLimiter(Config{Algorithm: algo, Limit: limit, Clock: ClockGateway, Prefix: "path-" + path + ":"}, c, clock.Clock())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				choosePath(t, path, &l.pool)
				paths[path] = l
			}
			for i := 0; i < 12; i++ {
				askBoth(t, paths, i)
				clock.Add(7 * time.Second)
			}
		})
	}
}

// TestGetIncrPathsAgree: redis-get-incr's three round trips go through the
// hotpath pool on a single server and through go-redis on a Cluster; the
// same requests get the same decisions through both, including the TTL
// set on a window's first increment and the denial at the limit.
func TestGetIncrPathsAgree(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client(t)
	limit := rate.Limit{Count: 3, Window: time.Minute}
	paths := map[string]Limiter{}
	for _, path := range []string{"hotpath", "go-redis"} {
		g := newGetIncr(Config{Algorithm: design.RedisGetIncr, Limit: limit, Prefix: "gi-" + path + ":"}, c)
		t.Cleanup(func() { g.Close() })
		choosePath(t, path, &g.pool)
		paths[path] = g
	}
	for i := range 10 {
		if d, want := askBoth(t, paths, i), i/2 < 3; d.Allowed != want {
			t.Fatalf("request %d: allowed %v, want %v (limit 3)", i, d.Allowed, want)
		}
	}
	for _, path := range []string{"hotpath", "go-redis"} {
		if ttl := c.PTTL(context.Background(), "gi-"+path+":gi:{id-0}").Val(); ttl < 59*time.Second || ttl > time.Minute {
			t.Errorf("%s: key TTL %v, want about the window", path, ttl)
		}
	}
}

// TestLeaseGrantPathsAgree: leasing's grants from Redis go through the
// hotpath pool on a single server and through go-redis on a Cluster; the same
// asks get the same grants through both, down to an empty window.
func TestLeaseGrantPathsAgree(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	clock := newFakeClock(epoch)
	leases := map[string]*Lease{}
	for _, path := range []string{"hotpath", "go-redis"} {
		l := newLease(Config{Algorithm: design.Leasing, Limit: rate.Limit{Count: 10, Window: time.Minute}, Clock: ClockGateway, Prefix: "lease-" + path + ":"}, c, clock.Clock())
		t.Cleanup(func() { l.Close() })
		choosePath(t, path, &l.pool)
		leases[path] = l
	}
	for i, want := range []int64{4, 4, 4, 4} {
		var got [2]grant
		for j, path := range []string{"hotpath", "go-redis"} {
			g, err := leases[path].grant(context.Background(), "id", want)
			if err != nil {
				t.Fatalf("%s grant %d: %v", path, i, err)
			}
			got[j] = g
		}
		if got[0].n != got[1].n || (got[0].windowLeft-got[1].windowLeft).Abs() > 100*time.Millisecond {
			t.Fatalf("grant %d of %d: hotpath %+v, go-redis %+v", i, want, got[0], got[1])
		}
		if wantN := min(want, max(0, 10-int64(i)*want)); got[0].n != wantN {
			t.Fatalf("grant %d: %d granted, want %d of the 10 left", i, got[0].n, wantN)
		}
	}
}

// choosePath leaves a limiter on the hotpath pool it got from a plain client
// ("hotpath"), or takes the pool away so it decides through go-redis, as on a
// Cluster ("go-redis").
func choosePath(t *testing.T, path string, pool **hotpath.Pool) {
	t.Helper()
	if *pool == nil {
		t.Fatal("a plain client did not get a hotpath pool")
	}
	if path == "go-redis" {
		(*pool).Close()
		*pool = nil
	}
}

// askBoth sends request i (identity id-0 or id-1, by turns) through both
// paths, fails the test unless they decide alike, and returns the decision.
func askBoth(t *testing.T, paths map[string]Limiter, i int) Decision {
	t.Helper()
	id := fmt.Sprintf("id-%d", i%2)
	var got [2]Decision
	for j, path := range []string{"hotpath", "go-redis"} {
		d, err := paths[path].Allow(context.Background(), id, 1)
		if err != nil {
			t.Fatalf("%s request %d: %v", path, i, err)
		}
		got[j] = d
	}
	if !sameDecision(got[0], got[1]) {
		t.Fatalf("request %d for %s: hotpath %+v, go-redis %+v", i, id, got[0], got[1])
	}
	return got[0]
}

// sameDecision compares two paths' decisions. Times that come from a
// key's TTL run in real time between the calls that set and read the two
// paths' keys, which a loaded test machine can stall for a few hundred
// milliseconds (seen: 150ms), so they may differ by up to a second of a
// minute's window; everything else must be equal.
func sameDecision(a, b Decision) bool {
	near := func(x, y time.Duration) bool { return (x - y).Abs() < time.Second }
	return a.Allowed == b.Allowed && a.Remaining == b.Remaining && a.By == b.By && near(a.Reset, b.Reset) && near(a.RetryAfter, b.RetryAfter)
}

// TestLuaDesignsOnCluster: on a 3-master Cluster every Lua design admits
// exactly L for identities spread over the masters. A design whose
// windows are whole minutes of the clock (redis-clock-window) admits L
// more in the next one: an identity whose requests may have straddled a
// minute's edge (the Cluster's servers share this machine's clock) is
// asked again under a new name.
func TestLuaDesignsOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { cc.Close() })
	const L = 3
	for _, algo := range luaDesigns {
		l := mustNew(t, Config{Algorithm: algo, Limit: rate.Limit{Count: L, Window: time.Minute}}, cc, nil)
		for i := 0; i < 6; i++ {
			id := fmt.Sprintf("%s-user-%d", algo, i)
			before := time.Now()
			ds := run(t, l, id, L+2)
			if before.Truncate(time.Minute) != time.Now().Truncate(time.Minute) {
				id += "-again"
				ds = run(t, l, id, L+2)
			}
			if n := allowed(ds); n != L {
				t.Fatalf("%s on Cluster, %s: %d admitted of %d, want %d", algo, id, n, L+2, L)
			}
			if ds[0].By != decision.ByRedis {
				t.Fatalf("%s: decided by %s", algo, ds[0].By)
			}
		}
	}
}
