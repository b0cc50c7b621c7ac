package verify

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// A shared run against an http target with no Redis named reads the
// gateway's clock: its decision time when it gives one (to the
// microsecond), else its Date (to the second). A machine whose clock runs
// 3 s ahead finds that offset, within the uncertainty it states.
func TestSharedRunReadsTheGatewayClock(t *testing.T) {
	t.Parallel()
	const ahead = 3 * time.Second
	for _, tc := range []struct {
		name      string
		decidedAt bool
		ref       string
		maxUnc    time.Duration
	}{
		{"decided-at", true, "http Decided-At", 100 * time.Millisecond},
		// Each Date reading is uncertain by half a second, and the two
		// can fall either side of a tick, which counts as drift.
		{"date", false, "http Date", 1100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.decidedAt {
					w.Header().Set(decision.DecidedAtHeader, decision.FormatDecidedAt(time.Now()))
				}
			}))
			t.Cleanup(srv.Close)
			// The gateway limits nothing: the claim is that every request
			// was answered, not a cap the traffic alone would keep.
			sc := parse(t, fmt.Sprintf(`name: clock
limit: 100/1s
target: {kind: http, urls: [%q], timeout: 2s}
traffic: {rate: 50/s, duration: 100ms}
thresholds: [errors == 0]
`, srv.URL+"/"))
			now := func() time.Time { return time.Now().Add(ahead) }
			// The common start is 3s away: the run's setup (connections,
			// probe, the clock's reading) comes before it, a busy machine
			// stretches that past a second, and a run that reaches the
			// start later than its whole 100ms fails as too late.
			// A reading is uncertain by half its round trip, which a busy
			// machine stretches past the bound: that try is run again
			// (calmtest.Retry), three in all.
			var c history.Clock
			wide := calmtest.Retry(t, 3, func(int) string {
				out, err := Run(context.Background(), sc, Options{StartAt: now().Add(3 * time.Second), Now: now})
				if err != nil {
					t.Fatal(err)
				}
				c = out.History.Meta.Clock
				out.History.Close()
				if c.Reference == tc.ref && c.Uncertainty > tc.maxUnc {
					return fmt.Sprintf("clock read uncertain by %v, over %v", c.Uncertainty, tc.maxUnc)
				}
				return ""
			})
			if c.Reference != tc.ref || c.Uncertainty <= 0 || wide != "" {
				t.Fatalf("clock %+v; want one read from %s, uncertain by at most %v", c, tc.ref, tc.maxUnc)
			}
			if d := c.Offset - ahead; d < -c.Uncertainty || d > c.Uncertainty {
				t.Fatalf("offset %v ± %v; the clock ran %v ahead", c.Offset, c.Uncertainty, ahead)
			}
		})
	}
}
