package limiter

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

var benchIDs = func() []string {
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	return ids
}()

// BenchmarkDecision is one decision of each design against a real
// redis-server on loopback (local designs need none), for identities in
// rotation, under a limit high enough that every request is admitted.
func BenchmarkDecision(b *testing.B) {
	s := redistest.Start(b)
	limit := rate.Limit{Count: 1_000_000_000, Window: time.Second}
	for _, algo := range design.Names() {
		b.Run(algo, func(b *testing.B) {
			var client redis.UniversalClient
			if !IsLocal(algo) {
				client = s.Client(b)
			}
			cfg := Config{Algorithm: algo, Limit: limit}
			if algo == design.RedisSlidingLog {
				// the log keeps every admission for W: keep W short
				cfg.Limit = rate.Limit{Count: 1_000_000_000, Window: 100 * time.Millisecond}
			}
			l, err := New(cfg, client, nil)
			if err != nil {
				b.Fatal(err)
			}
			if le, ok := l.(*Lease); ok {
				defer le.Close()
			}
			benchAllow(b, l)
		})
	}
	b.Run("policy/goroutine", func(b *testing.B) {
		l, _ := New(Config{Algorithm: design.RedisFixedWindow, Limit: limit}, s.Client(b), nil)
		benchAllow(b, WithPolicy(l, Policy{OnError: OnErrorOpen}, limit))
	})
	b.Run("policy/leasing", func(b *testing.B) {
		l, _ := New(Config{Algorithm: design.Leasing, Limit: limit}, s.Client(b), nil)
		defer l.(*Lease).Close()
		benchAllow(b, WithPolicy(l, Policy{OnError: OnErrorOpen}, limit))
	})
	b.Run("policy/context", func(b *testing.B) {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
		defer c.Close()
		l, _ := New(Config{Algorithm: design.RedisFixedWindow, Limit: limit}, c, nil)
		benchAllow(b, WithPolicy(l, Policy{OnError: OnErrorOpen}, limit, WithContextHonored(HonorsContext(c))))
	})
}

func benchAllow(b *testing.B, l Limiter) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Allow(ctx, benchIDs[i&1023], 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecisionCPU is redis-fixed-window decided by 50 goroutines at
// once (as 50 gateways would), through go-redis and through the hotpath pool.
// cpu-µs/op is this process's CPU time per decision (user + system): on a
// shared machine that is what the Redis server under test loses to the
// instrument, and it is steadier than a rate when other work runs.
func BenchmarkDecisionCPU(b *testing.B) {
	s := redistest.Start(b)
	limit := rate.Limit{Count: 1_000_000_000, Window: time.Minute}
	for _, path := range []string{"go-redis", "hotpath"} {
		b.Run(path, func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 50, ContextTimeoutEnabled: true, DisableIdentity: true})
			defer c.Close()
			l, err := newScriptLimiter(Config{Algorithm: design.RedisFixedWindow, Limit: limit}, c, time.Now)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			if path == "go-redis" {
				l.pool.Close()
				l.pool = nil
			}
			ctx := context.Background()
			measureCPU(b, func(_ int, id string) error {
				_, err := l.Allow(ctx, id, 1)
				return err
			})
		})
	}
}

// BenchmarkDecisionCPUGateways is BenchmarkDecisionCPU as make bench's
// simulated target runs it: 50 gateways, each with its own client of one
// connection (warm), each decision with the deadline a policy gives it
// (allowBy), through the hotpath pool.
func BenchmarkDecisionCPUGateways(b *testing.B) {
	s := redistest.Start(b)
	limit := rate.Limit{Count: 1_000_000_000, Window: time.Minute}
	ls := make([]*scriptLimiter, 50)
	for i := range ls {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1, ContextTimeoutEnabled: true, DisableIdentity: true})
		defer c.Close()
		l, err := newScriptLimiter(Config{Algorithm: design.RedisFixedWindow, Limit: limit}, c, time.Now)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		if err := l.Warm(context.Background(), 1); err != nil {
			b.Fatal(err)
		}
		ls[i] = l
	}
	ctx := context.Background()
	measureCPU(b, func(w int, id string) error {
		_, err := ls[w%len(ls)].allowBy(ctx, id, 1, time.Now().Add(time.Second))
		return err
	})
}

// measureCPU runs decide from 50 goroutines (w numbers each), for
// identities in rotation, and reports this process's CPU µs per decision.
func measureCPU(b *testing.B, decide func(w int, id string) error) {
	var next atomic.Int64
	b.SetParallelism(25) // 50 goroutines on 2 CPUs
	b.ReportAllocs()
	before := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := int(next.Add(1) - 1)
		i := 0
		for pb.Next() {
			if err := decide(w, benchIDs[i&1023]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-before)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}
