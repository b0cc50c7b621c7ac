package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestDBOutOfRangeIsUsage: a URL naming a database the server does not
// have is bad input (exit 2) that names the database, not an unreachable
// Redis.
func TestDBOutOfRangeIsUsage(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg, err := redisconn.Parse(redisconn.Options{URL: "redis://" + srv.Addr + "/99", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfg.Connect(context.Background())
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "database 99 does not exist") {
		t.Fatalf("Connect to db 99: %v (exit %d), want exit 2 naming database 99", err, exitcode.Of(err))
	}
}

// TestOutOfMemory: OutOfMemory finds a Redis that refuses writes for
// lack of memory (maxmemory with noeviction) and writes nothing either
// way; an operation refused with OOM is exit 3 and says OOM.
func TestOutOfMemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	if err := redisconn.OutOfMemory(ctx, c); err != nil {
		t.Fatalf("a Redis with room: %v", err)
	}
	redistest.FillPastMaxmemory(t, srv)
	before := c.DBSize(ctx).Val()
	err := redisconn.OutOfMemory(ctx, c)
	if !errors.Is(err, redisconn.ErrOutOfMemory) {
		t.Fatalf("a Redis past maxmemory: %v, want ErrOutOfMemory", err)
	}
	if after := c.DBSize(ctx).Val(); after != before {
		t.Fatalf("the probe wrote: %d keys before, %d after", before, after)
	}
	cfg, err := redisconn.Parse(redisconn.Options{URL: "redis://" + srv.Addr, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	op := cfg.OpError(ctx, "set", c.Set(ctx, "k", "v", 0).Err())
	if exitcode.Of(op) != exitcode.Unreachable || !strings.Contains(op.Error(), "out of memory (OOM") {
		t.Fatalf("OpError of a write refused with OOM: %v (exit %d), want exit 3 naming OOM", op, exitcode.Of(op))
	}
}

// TestNoPermIsUnreachable: a command the ACL user may not run is exit 3
// and says a permission is missing, not a plain failure (exit 1).
func TestNoPermIsUnreachable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	user, pw := redistest.RestrictedUser(t, srv, "limited", "~rl:*", "+@all")
	cfg, err := redisconn.Parse(redisconn.Options{URL: "redis://" + user + ":" + pw + "@" + srv.Addr, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := cfg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	op := cfg.OpError(ctx, "read", c.Get(ctx, "app:session").Err())
	if exitcode.Of(op) != exitcode.Unreachable || !strings.Contains(op.Error(), "lacks an ACL permission") || strings.Contains(op.Error(), pw) {
		t.Fatalf("OpError of NOPERM: %v (exit %d), want exit 3 saying a permission is missing", op, exitcode.Of(op))
	}
}
