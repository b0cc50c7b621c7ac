package limiter

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
	for _, algo := range Algorithms {
		b.Run(algo, func(b *testing.B) {
			var client redis.UniversalClient
			if !IsLocal(algo) {
				client = s.Client(b)
			}
			cfg := Config{Algorithm: algo, Limit: limit}
			if algo == RedisSlidingLog {
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
		l, _ := New(Config{Algorithm: RedisFixedWindow, Limit: limit}, s.Client(b), nil)
		benchAllow(b, WithPolicy(l, Policy{OnError: OnErrorOpen}, limit))
	})
	b.Run("policy/leasing", func(b *testing.B) {
		l, _ := New(Config{Algorithm: Leasing, Limit: limit}, s.Client(b), nil)
		defer l.(*Lease).Close()
		benchAllow(b, WithPolicy(l, Policy{OnError: OnErrorOpen}, limit))
	})
	b.Run("policy/context", func(b *testing.B) {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
		defer c.Close()
		l, _ := New(Config{Algorithm: RedisFixedWindow, Limit: limit}, c, nil)
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
