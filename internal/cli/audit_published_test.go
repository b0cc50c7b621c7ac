package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/redistest"
)

// TestAuditPublishedFeedsHotIdentities: with --published and no --limit,
// the published limit is the one the keys are checked against, so a
// fixed-window counter at 95 of 100 is a hot identity, as it is with
// --limit 100/1m; before, the audit said no identity was at 90%.
func TestAuditPublishedFeedsHotIdentities(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "rl:fw:{user46}", 95, 40*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "rl:fw:{user7}", 12, 40*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--published", "100/1m", "--gateways", "50", "--algorithm", "redis-fixed-window"},
		{"--limit", "100/1m"},
	} {
		out := &syncBuffer{}
		f, errOut := testFactory(out, nil)
		Run(f, append([]string{"audit", "--redis", "redis://" + srv.Addr, "--refresh-interval", "100ms"}, args...), nil, noExit(t))
		var hot string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "hot-identities") {
				hot = l
			}
		}
		if !strings.HasPrefix(hot, "warn") || !strings.Contains(out.String(), "rl:fw:{user46} (95 of 100)") || strings.Contains(out.String(), "rl:fw:{user7}") {
			t.Errorf("audit %v: hot-identities %q; want a warning naming rl:fw:{user46} (95 of 100) alone\n%s%s", args, hot, out, errOut)
		}
	}
}
