package redisconn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestConnectBoundedGivesUpWithinTheTimeout: on a real Redis that stops
// answering (CLIENT PAUSE) a call through a bounded client fails within
// one timeout, not after go-redis has retried it three more times, and
// OpError reports that as unreachable (exit 3). A refusal by Redis stays a
// plain failure.
func TestConnectBoundedGivesUpWithinTheTimeout(t *testing.T) {
	srv := redistest.Start(t)
	const timeout = 300 * time.Millisecond
	cfg, err := redisconn.Parse(redisconn.Options{URL: srv.URL(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	client, err := cfg.ConnectBounded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	err = cfg.OpError(ctx, "refused", client.Do(ctx, "NOSUCHCOMMAND").Err())
	if err == nil || exitcode.Of(err) == exitcode.Unreachable {
		t.Errorf("a reply from Redis: %v (exit %d), want a plain failure", err, exitcode.Of(err))
	}

	// go-redis retries a timed-out command on a new connection (the old
	// one is discarded), so the pool's misses count the attempts: a
	// bounded call makes one.
	admin := srv.Client(t)
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 3000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	pool := client.(*redis.Client)
	before := pool.PoolStats().Misses
	start := time.Now()
	err = client.Get(ctx, "k").Err()
	took := time.Since(start)
	if err == nil {
		t.Fatal("GET answered while every client was paused")
	}
	if retries := pool.PoolStats().Misses - before; retries != 0 {
		t.Errorf("the stalled GET was retried %d times after its timeout, want none", retries)
	}
	if took > 5*timeout {
		t.Errorf("gave up after %v, want about one %v timeout", took, timeout)
	}
	err = cfg.OpError(ctx, "read k", err)
	if exitcode.Of(err) != exitcode.Unreachable || errors.Is(err, context.Canceled) {
		t.Errorf("stalled: %v (exit %d), want unreachable", err, exitcode.Of(err))
	}
}
