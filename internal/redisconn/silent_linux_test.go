package redisconn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestSilentServerFailsWithinTheTimeout: against an address whose TCP
// handshake never completes, and one that accepts and never answers,
// Connect fails as unreachable within its timeout, in every mode and with
// TLS: the direct attempt that looks for a hidden cause runs inside the
// same timeout, not after it. The margin allows for a loaded machine; it
// bounds, and claims no speed.
func TestSilentServerFailsWithinTheTimeout(t *testing.T) {
	t.Parallel()
	const timeout, margin = 600 * time.Millisecond, 400 * time.Millisecond
	noHandshake := redistest.NoHandshake(t)
	silent, _ := redistest.Silent(t)
	for _, addr := range []string{noHandshake, silent} {
		for _, form := range []string{"redis://%s", "rediss://%s", "redis+sentinel://%s/m", "redis+cluster://%s"} {
			url := fmt.Sprintf(form, addr)
			t.Run(url, func(t *testing.T) {
				t.Parallel()
				cfg, err := redisconn.Parse(redisconn.Options{URL: url, Timeout: timeout})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				_, err = cfg.Connect(context.Background())
				took := time.Since(start)
				if err == nil || exitcode.Of(err) != exitcode.Unreachable {
					t.Fatalf("Connect: %v (exit %d), want unreachable", err, exitcode.Of(err))
				}
				if took > timeout+margin {
					t.Fatalf("gave up after %v with --timeout %v: %v", took, timeout, err)
				}
			})
		}
	}
}
