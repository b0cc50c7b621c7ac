package redisconn

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestGoRedisLogIsQuietThenRedacted(t *testing.T) {
	ctx := context.Background()
	// By default go-redis's own log lines (here: failed dials) go nowhere.
	var buf bytes.Buffer
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	_ = c.Ping(ctx).Err()
	c.Close()

	SetLogOutput(&buf)
	defer SetLogOutput(nil)
	sink.Printf(ctx, "redis: reconnect to %s failed", "redis://ops:hunter2@10.0.0.1:6379")
	got := buf.String()
	if !strings.Contains(got, "redis://ops:xxxxx@10.0.0.1:6379") || strings.Contains(got, "hunter2") {
		t.Errorf("log line %q: want the URL redacted", got)
	}
	if strings.Count(got, "\n") != 1 {
		t.Errorf("log line %q: want exactly one line", got)
	}
}
