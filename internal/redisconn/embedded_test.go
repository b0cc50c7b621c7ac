package redisconn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestEmbeddedExpiresInRealTime: miniredis alone never expires a key; the
// embedded server must, within a few ticks of its TTL.
func TestEmbeddedExpiresInRealTime(t *testing.T) {
	ctx := context.Background()
	e, err := StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := redis.NewClient(&redis.Options{Addr: e.Addr()})
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 200*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, "k").Val(); n != 1 {
		t.Fatalf("key missing right after SET")
	}
	// Poll rather than sleep a fixed time: the assertion is that it goes,
	// not how fast this machine is. 10s is far beyond 200ms.
	deadline := time.Now().Add(10 * time.Second)
	for c.Exists(ctx, "k").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("key with a 200ms TTL still exists after 10s of real time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEmbeddedTimeAdvances: TIME (also inside Lua) must follow the real
// clock, or a limiter taking its clock from Redis never rolls its window.
func TestEmbeddedTimeAdvances(t *testing.T) {
	ctx := context.Background()
	e, err := StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := redis.NewClient(&redis.Options{Addr: e.Addr()})
	defer c.Close()
	t1, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t1); d < -time.Second || d > time.Second {
		t.Errorf("TIME = %v, %v away from the real clock", t1, d)
	}
	time.Sleep(50 * time.Millisecond)
	t2, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !t2.After(t1) {
		t.Errorf("TIME did not advance: %v then %v", t1, t2)
	}
	// Lua's redis.call('TIME') reads the same clock.
	v, err := c.Eval(ctx, "return redis.call('TIME')[1]", nil).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(time.Unix(v, 0)); d < -2*time.Second || d > 2*time.Second {
		t.Errorf("TIME in Lua = %d, %v away from the real clock", v, d)
	}
}

func TestEmbeddedStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e, err := StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-e.done
	c := redis.NewClient(&redis.Options{Addr: e.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Error("embedded server still answers after its context was cancelled")
	}
	if err := e.Close(); err != nil {
		t.Errorf("Close after cancel: %v", err)
	}
}

// TestEmbeddedNeverExpiresEarly: a key must not vanish before its TTL. An
// early expiry rolls a fixed window early and makes a correct limiter look
// leaky. Keys are set at varied moments between the idle ticks, where a
// catch-up done only by the ticker would cut the TTL short.
func TestEmbeddedNeverExpiresEarly(t *testing.T) {
	ctx := context.Background()
	e, err := StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := redis.NewClient(&redis.Options{Addr: e.Addr()})
	defer c.Close()

	const ttl = 100 * time.Millisecond
	for round := 0; round < 8; round++ {
		key := fmt.Sprintf("k%d", round)
		time.Sleep(time.Duration(round*7%20) * time.Millisecond)
		before := time.Now()
		if err := c.Set(ctx, key, "v", ttl).Err(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := c.Exists(ctx, key).Result()
			got := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				// The command that saw it gone was answered at got; the
				// key was set after before. Allow one catch-up step.
				if early := before.Add(ttl - e.currentStep()).Sub(got); early > 0 {
					t.Fatalf("round %d: key with a %v TTL gone %v early", round, ttl, early)
				}
				break
			}
			if got.After(deadline) {
				t.Fatal("key never expired")
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
}
