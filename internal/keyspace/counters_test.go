package keyspace

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

func schemaNamed(t *testing.T, p Params, name string) *Schema {
	t.Helper()
	s, err := NewRegistry(p).Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readCounts(t *testing.T, c redis.UniversalClient, s *Schema, ids ...string) *Counts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := ReadCounts(ctx, c, s, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Counts) != len(ids) {
		t.Fatalf("%d counts for %d identities", len(got.Counts), len(ids))
	}
	for i, id := range ids {
		if got.Counts[i].ID != id {
			t.Fatalf("count %d is %q's, want %q's", i, got.Counts[i].ID, id)
		}
	}
	return got
}

// redisRateHolds spends hits[id] of each identity's allowance with
// go-redis/redis_rate itself and returns what the library says is used:
// its burst minus the Remaining of the last answer. The period is an
// hour, so nothing refills noticeably while the test reads.
func redisRateHolds(t *testing.T, c redis.UniversalClient, lim redis_rate.Limit, hits map[string]int) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	l := redis_rate.NewLimiter(c)
	out := map[string]int64{}
	for id, n := range hits {
		var res *redis_rate.Result
		for range n {
			r, err := l.Allow(ctx, id, lim)
			if err != nil {
				t.Fatal(err)
			}
			res = r
		}
		out[id] = int64(lim.Burst - res.Remaining)
	}
	return out
}

func checkCounts(t *testing.T, got *Counts, want map[string]int64) {
	t.Helper()
	for id, w := range want {
		n, ok := got.Get(id)
		if !ok || !n.Known || n.Used != w {
			t.Errorf("%s: read %+v, the library holds %d", id, n, w)
		}
	}
}

func TestReadCountsOfRedisRate(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	lim := redis_rate.Limit{Rate: 10, Burst: 10, Period: time.Hour}
	holds := redisRateHolds(t, c, lim, map[string]int{"alice": 3, "bob": 7, "carol": 12})
	foreign := redistest.SeedForeign(t, c)
	keys := redistest.TakeSnapshot(t, c, "rate:alice", "rate:bob", "rate:carol")

	s := schemaNamed(t, Params{Limit: rate.Limit{Count: 10, Window: time.Hour}}, SchemaRedisRate)
	got := readCounts(t, c, s, "alice", "bob", "carol", "dave")
	checkCounts(t, got, holds)
	if holds["carol"] != 10 {
		t.Fatalf("carol: redis_rate holds %d after 12 requests on a burst of 10", holds["carol"])
	}
	if d, _ := got.Get("dave"); !d.Known || d.Used != 0 || d.Key != "" || len(d.Keys) != 0 {
		t.Errorf("dave, who never came: %+v", d)
	}
	if a, _ := got.Get("alice"); a.Kind != CountGCRA || a.Key != "rate:alice" {
		t.Errorf("alice: %+v", a)
	}
	// Read-only: the counters and everything else are as they were.
	keys.AssertUnchanged(t, c)
	foreign.AssertUnchanged(t, c)

	// Without the limit a TAT cannot be turned into a count: said, not guessed.
	unknown := readCounts(t, c, schemaNamed(t, Params{}, SchemaRedisRate), "alice")
	if a := unknown.Counts[0]; a.Known || a.Note == "" {
		t.Errorf("alice without a limit: %+v", a)
	}
}

func TestReadCountsOfRedisRateOnACluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { c.Close() })
	lim := redis_rate.Limit{Rate: 20, Burst: 20, Period: time.Hour}
	hits := map[string]int{}
	var ids []string
	for i := range 12 { // spread over the three shards
		id := "user-" + strconv.Itoa(i)
		hits[id] = i + 1
		ids = append(ids, id)
	}
	holds := redisRateHolds(t, c, lim, hits)
	s := schemaNamed(t, Params{Limit: rate.Limit{Count: 20, Window: time.Hour}}, SchemaRedisRate)
	checkCounts(t, readCounts(t, c, s, ids...), holds)
}

// ululeHolds sends hits[id] requests through ulule/limiter's Redis store
// and returns the count it holds: what Peek says is used below the limit,
// and the requests sent once over it (the store counts denied ones too,
// which Peek only reports as Reached).
func ululeHolds(t *testing.T, c redis.UniversalClient, r limiter.Rate, hits map[string]int) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	store, err := ulredis.NewStoreWithOptions(c, limiter.StoreOptions{Prefix: "limiter"})
	if err != nil {
		t.Fatal(err)
	}
	l := limiter.New(store, r)
	out := map[string]int64{}
	for id, n := range hits {
		for range n {
			if _, err := l.Get(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		p, err := l.Peek(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Reached != (int64(n) > r.Limit) {
			t.Fatalf("%s: ulule says reached=%v after %d of %d", id, p.Reached, n, r.Limit)
		}
		out[id] = r.Limit - p.Remaining
		if p.Reached {
			out[id] = int64(n)
		}
	}
	return out
}

func TestReadCountsOfUlule(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	r := limiter.Rate{Period: time.Hour, Limit: 5}
	holds := ululeHolds(t, c, r, map[string]int{"alice": 2, "bob": 5, "carol": 8})
	foreign := redistest.SeedForeign(t, c)
	s := schemaNamed(t, Params{Limit: rate.Limit{Count: 5, Window: time.Hour}}, SchemaUlule)
	got := readCounts(t, c, s, "alice", "bob", "carol")
	checkCounts(t, got, holds)
	if n, _ := got.Get("carol"); n.Used != 8 || n.Kind != CountWindow {
		t.Errorf("carol: %+v; ulule counts the denied requests too", n)
	}
	foreign.AssertUnchanged(t, c)
}

func TestReadCountsOfUluleThroughSentinel(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	sen := redistest.StartSentinel(t, primary)
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sen.MasterName, SentinelAddrs: []string{sen.Addr}})
	t.Cleanup(func() { c.Close() })
	r := limiter.Rate{Period: time.Hour, Limit: 50}
	holds := ululeHolds(t, c, r, map[string]int{"alice": 4, "bob": 9})
	s := schemaNamed(t, Params{Limit: rate.Limit{Count: 50, Window: time.Hour}}, SchemaUlule)
	checkCounts(t, readCounts(t, c, s, "alice", "bob"), holds)
}

// Layouts whose keys carry a window (rlctl's clock window), a sliding log
// and a user's own pattern: the current window is read, a log's entries in
// the window, a custom counter as it stands.
func TestReadCountsOfWindowsLogsAndCustomPatterns(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	now, err := ServerTime(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	w := time.Hour
	idx := now.UnixMilli() / w.Milliseconds()
	c.Set(ctx, fmt.Sprintf("rl:cw:{alice}:%d", idx-1), 40, time.Minute) // the window before
	c.Set(ctx, fmt.Sprintf("rl:cw:{alice}:%d", idx), 6, w)
	c.Set(ctx, fmt.Sprintf("rl:cw:{alice-2}:%d", idx), 9, w) // another identity sharing a prefix
	p := Params{Limit: rate.Limit{Count: 10, Window: w}}
	cw := readCounts(t, c, schemaNamed(t, p, "redis-clock-window"), "alice")
	if a := cw.Counts[0]; a.Used != 6 || a.Kind != CountWindow || len(a.Keys) != 2 {
		t.Errorf("clock window: %+v, want the current window's 6 of alice's two keys", a)
	}

	ms := now.UnixMilli()
	var zs []redis.Z
	for i := range 7 { // five in the last minute, two older
		age := int64(i) * 10_000
		if i >= 5 {
			age = int64(i) * 60_000
		}
		zs = append(zs, redis.Z{Score: float64(ms - age), Member: strconv.Itoa(i)})
	}
	c.ZAdd(ctx, "rl:sl:{bob}", zs...)
	log := readCounts(t, c, schemaNamed(t, Params{Limit: rate.Limit{Count: 10, Window: time.Minute}}, "redis-sliding-log"), "bob")
	if b := log.Counts[0]; b.Used != 5 || b.Kind != CountLog {
		t.Errorf("sliding log: %+v, want the 5 entries of the last minute", b)
	}
	card := readCounts(t, c, schemaNamed(t, Params{}, "redis-sliding-log"), "bob")
	if b := card.Counts[0]; b.Used != 7 {
		t.Errorf("sliding log without a window: %+v, want its cardinality 7", b)
	}

	c.Set(ctx, "shop:carol:hits", 17, time.Minute)
	custom, err := CustomSchema(CustomSpec{Pattern: "shop:{id}:hits", Window: time.Minute, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if n := readCounts(t, c, custom, "carol").Counts[0]; n.Used != 17 || n.Key != "shop:carol:hits" {
		t.Errorf("custom pattern: %+v", n)
	}
}
