package limiter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

var luaDesigns = []string{RedisFixedWindow, RedisFixedWindowRefresh, RedisClockWindow,
	RedisTokenBucket, RedisSlidingWindow, RedisSlidingLog, RedisGCRA}

// TestDecisionPathsAgree: on a single server the Lua designs decide through
// the resp pool, on a Cluster through go-redis. The two must send the same
// arguments and read the same reply: the same request sequence, at the same
// gateway-clock instants, gets the same decisions through both (each path
// on its own key prefix of one real server). Tests elsewhere run the
// designs through New, so on the resp path.
func TestDecisionPathsAgree(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client(t)
	limit := rate.Limit{Count: 4, Window: time.Minute}
	for _, algo := range luaDesigns {
		t.Run(algo, func(t *testing.T) {
			clock := newFakeClock(epoch)
			paths := map[string]*scriptLimiter{}
			for _, path := range []string{"resp", "go-redis"} {
				l, err := newScriptLimiter(Config{Algorithm: algo, Limit: limit, Clock: ClockGateway, Prefix: "path-" + path + ":"}, c, clock.Clock())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				if l.pool == nil {
					t.Fatal("a plain client did not get a resp pool")
				}
				if path == "go-redis" {
					l.pool.Close()
					l.pool = nil
				}
				paths[path] = l
			}
			for i := 0; i < 12; i++ {
				id := fmt.Sprintf("id-%d", i%2)
				var got [2]Decision
				for j, path := range []string{"resp", "go-redis"} {
					d, err := paths[path].Allow(context.Background(), id, 1)
					if err != nil {
						t.Fatalf("%s request %d: %v", path, i, err)
					}
					got[j] = d
				}
				// The fixed windows' times come from the key's TTL, which
				// runs in real time between the two calls; everything the
				// gateway clock decides must be equal.
				near := func(a, b time.Duration) bool { return (a - b).Abs() < 100*time.Millisecond }
				a, b := got[0], got[1]
				if a.Allowed != b.Allowed || a.Remaining != b.Remaining || a.By != b.By ||
					!near(a.Reset, b.Reset) || !near(a.RetryAfter, b.RetryAfter) {
					t.Fatalf("request %d for %s: resp %+v, go-redis %+v", i, id, got[0], got[1])
				}
				clock.Add(7 * time.Second)
			}
		})
	}
}

// TestLuaDesignsOnCluster: on a 3-master Cluster every Lua design admits
// exactly L for identities spread over the masters.
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
			ds := run(t, l, id, L+2)
			if n := allowed(ds); n != L {
				t.Fatalf("%s on Cluster, %s: %d admitted of %d, want %d", algo, id, n, L+2, L)
			}
			if ds[0].By != decision.ByRedis {
				t.Fatalf("%s: decided by %s", algo, ds[0].By)
			}
		}
	}
}
