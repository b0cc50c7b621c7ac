package cli

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestCommandsGiveUpWithinTheirTimeout: against a Redis whose TCP
// handshake never completes, every command that talks to Redis exits 3
// within its --timeout, not a second after it. The margin allows for a
// loaded machine; it bounds, and claims no speed. A machine stalled past
// the margin (CI saw half a second) is given three tries: a command that
// waits beyond its timeout does so every time.
func TestCommandsGiveUpWithinTheirTimeout(t *testing.T) {
	t.Parallel()
	const timeout, margin = 600 * time.Millisecond, 500 * time.Millisecond
	url := "redis://" + redistest.NoHandshake(t)
	for _, args := range [][]string{
		{"ping"},
		{"keys", "inspect", "ann"},
		{"keys", "reset", "ann", "--yes"},
		{"keys", "repair-ttl", "--dry-run"},
		{"audit"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			// A command that waits past its timeout does so every time;
			// one that gave up late once may have been stalled.
			late := calmtest.Retry(t, 3, func(int) string {
				f, errOut := testFactory(io.Discard, nil)
				start := time.Now()
				code := Run(f, append(args, "--redis", url, "--timeout", timeout.String()), nil, noExit(t))
				took := time.Since(start)
				if code != int(exitcode.Unreachable) {
					t.Fatalf("exit %d, want 3; stderr: %s", code, errOut)
				}
				if took > timeout+margin {
					return fmt.Sprintf("gave up after %v with --timeout %v; stderr: %s", took, timeout, errOut)
				}
				return ""
			})
			if late != "" {
				t.Fatal(late)
			}
		})
	}
}
