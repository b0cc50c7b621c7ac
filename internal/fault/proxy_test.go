package fault

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redistest"
)

func TestProxyFaultsAgainstRealRedis(t *testing.T) {
	a := redistest.Start(t)
	b := redistest.Start(t)
	ctx := context.Background()
	a.Client(t).Set(ctx, "who", "a", 0)
	b.Client(t).Set(ctx, "who", "b", 0)

	p, err := NewProxy(a.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
	defer c.Close()

	if got := c.Get(ctx, "who").Val(); got != "a" {
		t.Fatalf("through proxy: got %q, want a", got)
	}

	t.Run("down", func(t *testing.T) {
		p.SetDown(true)
		start := time.Now()
		if err := c.Ping(ctx).Err(); err == nil {
			t.Fatal("ping succeeded through a downed proxy")
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("error took %v; a downed Redis must fail fast", el)
		}
		p.SetDown(false)
		var err error
		for i := 0; i < 20; i++ {
			if err = c.Ping(ctx).Err(); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("after recovery: %v", err)
		}
	})

	t.Run("failover", func(t *testing.T) {
		p.SetUpstream(b.Addr)
		var got string
		for i := 0; i < 20; i++ {
			if got = c.Get(ctx, "who").Val(); got == "b" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got != "b" {
			t.Fatalf("after SetUpstream: got %q, want b", got)
		}
	})
}
