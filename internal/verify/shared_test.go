package verify

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

// A run against a Redis rlctl did not start writes and deletes only keys
// of its own, even with faults that delete keys (redis-reset, a staged
// failover): another application's keys under rl:, app: and elsewhere,
// and keys named exactly as the run's design would name its own, stay
// byte-identical with their TTLs; nothing of the run is left behind.
func TestSharedRedisRunTouchesOnlyItsOwnKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	foreign := redistest.SeedForeign(t, c)
	// The very names the designs below would use without a namespace.
	lc := limiter.Config{Algorithm: design.RedisFixedWindow, Limit: rate.Limit{Count: 20, Window: time.Second}, Prefix: "rl:"}
	var lookalikes []string
	for _, id := range []string{"user-0", "user-1"} {
		lookalikes = append(lookalikes, limiter.Keys(lc, id, time.Now())...)
		lookalikes = append(lookalikes, limiter.Keys(lc, id, time.Now().Add(time.Second))...)
		lookalikes = append(lookalikes, "rl:"+id)
	}
	lookalikes = append(lookalikes, "rl:"+limiter.MarkerKey)
	slices.Sort(lookalikes)
	lookalikes = slices.Compact(lookalikes)
	for _, k := range lookalikes {
		if err := c.Set(ctx, k, "7", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mine := redistest.TakeSnapshot(t, c, lookalikes...)

	// One window spans the whole run, so each fault that deletes the
	// run's counters shows as one more quota of 20 admitted.
	simulated := parse(t, `name: shared-simulated
limit: 20/10s
target: {algorithm: redis-fixed-window, gateways: 2, timeout: 500ms}
traffic: {rate: 100/s, duration: 3s}
faults:
  - {at: 1s, action: redis-reset}
  - {at: 2s, action: failover}
thresholds: [allowed > 0]
`)
	out, err := Run(ctx, simulated, Options{Redis: srv.URL()})
	if err != nil {
		t.Fatalf("simulated run: %v", err)
	}
	if v := measured(t, out, metric.Allowed); v <= 45 {
		t.Errorf("allowed %g, want about 60: the faults did not delete the run's own counters", v)
	}
	script := parse(t, fmt.Sprintf(`name: shared-script
limit: 20/10s
target:
  kind: redis-script
  script: %s
  keys: ["rl:{id}"]
  args: ["{limit}", "{window_s}"]
  allowed: "== 1"
traffic: {rate: 100/s, duration: 2s}
faults:
  - {at: 1s, action: redis-reset}
thresholds: [allowed > 0]
`, "../scenario/testdata/scripts/limit.lua"))
	out, err = Run(ctx, script, Options{Redis: srv.URL()})
	if err != nil {
		t.Fatalf("script run: %v", err)
	}
	if v := measured(t, out, metric.Allowed); v <= 30 {
		t.Errorf("allowed %g, want about 40: the reset did not delete the run's own counter", v)
	}

	foreign.AssertUnchanged(t, c)
	mine.AssertUnchanged(t, c)
	left, err := c.Keys(ctx, "*rlctl-*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the runs left %d keys behind: %v", len(left), left[:min(5, len(left))])
	}
	if n := c.DBSize(ctx).Val(); n != int64(len(foreign.Keys())+len(lookalikes)) {
		t.Errorf("Redis holds %d keys, want only the %d seeded", n, len(foreign.Keys())+len(lookalikes))
	}
}
