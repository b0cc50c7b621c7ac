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
	_, c := embeddedClient(t)
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
	_, c := embeddedClient(t)
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
	e, c := embeddedClient(t)

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

// One catch-up that lost the CPU (its cost inflated by preemption, not by
// the keyspace) leaves the step where the keyspace puts it; a keyspace
// whose every walk is slow raises it, up to embeddedMaxStep.
func TestEmbeddedStepIgnoresOneSlowWalk(t *testing.T) {
	e := &Embedded{}
	for range embeddedCostSamples - 1 {
		e.recordCost(20 * time.Microsecond)
	}
	e.recordCost(30 * time.Millisecond)
	if got := e.currentStep(); got != embeddedStep {
		t.Errorf("after one slow walk among fast ones the step is %v, want %v", got, embeddedStep)
	}
	for range embeddedCostSamples {
		e.recordCost(2 * time.Millisecond)
	}
	if got := e.currentStep(); got != 20*time.Millisecond {
		t.Errorf("after walks of 2ms the step is %v, want 20ms", got)
	}
	for range embeddedCostSamples {
		e.recordCost(time.Second)
	}
	if got := e.currentStep(); got != embeddedMaxStep {
		t.Errorf("after walks of 1s the step is %v, want %v", got, embeddedMaxStep)
	}
}

// A key is gone once the PTTL it announced has passed (give or take one
// catch-up step), even right after a catch-up that was slow for reasons
// other than the keyspace: a fixed window's Retry-After is that PTTL, and a
// client that waits exactly as told must find the window rolled.
func TestEmbeddedKeyGoneWhenItsPTTLSaysSo(t *testing.T) {
	ctx := context.Background()
	e, c := embeddedClient(t)

	for round := 0; round < 8; round++ {
		key := fmt.Sprintf("k%d", round)
		if err := c.Set(ctx, key, "v", 40*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(round%4*5) * time.Millisecond)
		// A catch-up now that cost 30ms for want of the CPU: a step
		// raised by it would leave the key until long after its PTTL.
		e.catchUp(time.Now())
		e.mu.Lock()
		e.recordCost(30 * time.Millisecond)
		e.mu.Unlock()
		pttl, err := c.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		read := time.Now()
		// A handful of keys: the step is the least one, and 5ms is what
		// the retry figures allow a client that waited exactly.
		time.Sleep(time.Until(read.Add(pttl + 5*time.Millisecond)))
		n, err := c.Exists(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("round %d: key still there %v after its PTTL of %v was read (step %v)", round, time.Since(read), pttl, e.currentStep())
		}
	}
}

// embeddedClient starts an embedded server and a client of it, both closed
// when the test ends.
func embeddedClient(t *testing.T) (*Embedded, *redis.Client) {
	t.Helper()
	e, err := StartEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c := redis.NewClient(&redis.Options{Addr: e.Addr()})
	t.Cleanup(func() { c.Close() })
	return e, c
}

// A key a command names is gone once its TTL has run out, even while every
// catch-up is slow enough to raise the step to its largest: the step may
// leave an expired key in the keyspace, never answering a command. Both a
// plain command's key and a script's declared KEYS are expired on time.
func TestEmbeddedNamedKeyGoneOnTimeWhateverTheStep(t *testing.T) {
	ctx := context.Background()
	e, c := embeddedClient(t)
	// A catch-up has just happened, and walks have been slow: the next
	// one is a full step away.
	slow := func() {
		e.catchUp(time.Now())
		e.mu.Lock()
		for range embeddedCostSamples {
			e.recordCost(time.Second)
		}
		e.mu.Unlock()
	}
	script := redis.NewScript(`return redis.call('EXISTS', KEYS[1])`)
	for round := 0; round < 8; round++ {
		key := fmt.Sprintf("k%d", round)
		slow()
		if err := c.Set(ctx, key, "v", 10*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		// The TTL began before the answer came back, however late a busy
		// machine ran the command: 15ms after the answer it has run out.
		set := time.Now()
		time.Sleep(time.Until(set.Add(15 * time.Millisecond)))
		var n int64
		var err error
		if round%2 == 0 {
			n, err = c.Exists(ctx, key).Result()
		} else {
			n, err = script.Run(ctx, c, []string{key}).Int64()
		}
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("round %d: a key set with a 10ms TTL still answers %v after SET answered (step %v)", round, time.Since(set), e.currentStep())
		}
	}
}
