package keyspace

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

// plantMixed writes limiterKeys limiter keys (every seventh without TTL)
// and, for each, others unrelated keys without TTL, which no pass may
// touch. It returns the limiter keys that lack a TTL.
func plantMixed(t *testing.T, c redis.UniversalClient, limiterKeys, others int) map[string]bool {
	t.Helper()
	ctx := context.Background()
	want := map[string]bool{}
	for i := 0; i < limiterKeys; i++ {
		k := fmt.Sprintf("rl:fw:{%d}", i)
		ttl := time.Hour
		if i%7 == 3 {
			ttl = 0
			want[k] = true
		}
		must(t, c.Set(ctx, k, i, ttl).Err())
		for j := 0; j < others; j++ {
			must(t, c.Set(ctx, fmt.Sprintf("session:%d:%d", i, j), "x", 0).Err())
		}
	}
	return want
}

// checkRepaired asserts that exactly the keys in want got the schema's
// TTL and nothing else changed.
func checkRepaired(t *testing.T, c redis.UniversalClient, st RepairStats, want map[string]bool) {
	t.Helper()
	if st.Repaired != int64(len(want)) || st.MissingTTL != int64(len(want)) {
		t.Fatalf("stats %+v, want %d repaired", st, len(want))
	}
	for k, s := range snapshot(t, c) {
		switch {
		case want[k] && (s.ttl <= 0 || s.ttl > time.Minute):
			t.Errorf("%s: TTL %v, want the schema's 1m", k, s.ttl)
		case !want[k] && k[0] == 's' && s.hasTTL:
			t.Errorf("%s: unrelated key got a TTL", k)
		case !want[k] && k[0] == 'r' && s.ttl <= time.Minute:
			t.Errorf("%s: TTL %v changed", k, s.ttl)
		}
	}
}

// TestRepairTTLMixedKeyspace crosses both ways repair-ttl reads a page:
// checked by the server while it scans (while nearly all keys are limiter
// keys) and scanned first, then only the limiter keys checked (here one in
// four). The first page is read the first way, later pages the second.
func TestRepairTTLMixedKeyspace(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	want := plantMixed(t, c, 1500, 3)
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	st, err := RepairTTL(context.Background(), c, RepairOptions{Schemas: reg.All()})
	if err != nil {
		t.Fatal(err)
	}
	if st.Scanned != 6000 || st.Matched != 1500 {
		t.Fatalf("stats %+v", st)
	}
	checkRepaired(t, c, st, want)
}

// TestRepairTTLClusterManyKeys checks pages across many slots on every
// primary of a Cluster: the server reads keys of several slots in one
// script call, which a Cluster node allows for its own keys.
func TestRepairTTLClusterManyKeys(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { c.Close() })
	want := plantMixed(t, c, 2000, 0)
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	st, err := RepairTTL(context.Background(), c, RepairOptions{Schemas: reg.All()})
	if err != nil {
		t.Fatal(err)
	}
	checkRepaired(t, c, st, want)
}
