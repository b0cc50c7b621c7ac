package verify

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// A failover rlctl applies, with --allow-failover, to a Sentinel it did not
// start, under simulated gateways, writes only the run's own keys: on the
// replica it promotes and on the old primary, which the watch for its
// demotion keeps probing after the election, another application's keys
// are byte-identical, and every other key is under the design's prefix.
func TestFailoverOfAUsersSentinelWritesOnlyTheRunsKeys(t *testing.T) {
	t.Parallel()
	d := redistest.Spawn(t, redisconn.SpawnOptions{Replicas: 1, Sentinels: 3})
	cfg, err := redisconn.Parse(redisconn.Options{URL: d.URL(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := cfg.SentinelShard(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	primary := redis.NewClient(&redis.Options{Addr: sh.Primary})
	replica := redis.NewClient(&redis.Options{Addr: sh.Replicas[0]})
	t.Cleanup(func() { primary.Close(); replica.Close() })
	seeded := redistest.SeedForeign(t, primary)
	if err := primary.Do(t.Context(), "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	// Compared on each node as it holds them (a replica's encoding of a
	// value may differ from its primary's, byte for byte).
	onReplica := redistest.TakeSnapshot(t, replica, seeded.Keys()...)
	out, err := Run(t.Context(), parse(t, `name: users-sentinel
limit: 20/1s
target:
  algorithm: redis-fixed-window
  gateways: 2
  redis: `+d.URL()+`
  timeout: 500ms
traffic: {rate: 100/s, duration: 3s}
faults: [{at: 1s, action: failover}]
max_error_rate: 1
thresholds: [election < 7s]
`), Options{AllowFailover: true})
	if err != nil {
		t.Fatalf("run: %v (notes %v)", err, out.Saved.Notes)
	}
	if f := out.History.Meta.Faults[0]; f.Answered <= f.At {
		t.Fatalf("no election recorded: %+v", f)
	}
	seeded.AssertUnchanged(t, primary)
	onReplica.AssertUnchanged(t, replica)
	for _, c := range []*redis.Client{primary, replica} {
		keys, err := c.Keys(t.Context(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !slices.Contains(seeded.Keys(), k) && !strings.HasPrefix(k, design.DefaultPrefix) {
				t.Errorf("%s holds %q, neither another application's key nor the run's", c.Options().Addr, k)
			}
		}
	}
}
