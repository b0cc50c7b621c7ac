package redistest

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Connections counts the client connections c's server holds, c's own
// included (CLIENT LIST).
func Connections(t testing.TB, c *redis.Client) int {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(strings.TrimSpace(list), "\n") + 1
}

// Accepted is how many connections c's server has accepted since it
// started (INFO stats total_connections_received): a test that expects
// open connections to be reused checks it does not move.
func Accepted(t testing.TB, c *redis.Client) string {
	t.Helper()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			return v
		}
	}
	t.Fatal("no total_connections_received in INFO stats")
	return ""
}
