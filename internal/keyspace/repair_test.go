package keyspace

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

// keyState is a key's value (DUMP, so any type compares) and whether it
// has a TTL.
type keyState struct {
	dump   string
	hasTTL bool
	ttl    time.Duration
}

func snapshot(t *testing.T, c redis.UniversalClient) map[string]keyState {
	t.Helper()
	ctx := context.Background()
	out := map[string]keyState{}
	var mu sync.Mutex
	err := ForEachPrimary(ctx, c, func(ctx context.Context, n Node) error {
		return ScanNode(ctx, n, "*", func(keys []string) error {
			for _, k := range keys {
				d, err := n.Client.Dump(ctx, k).Result()
				if err != nil {
					return err
				}
				ttl := n.Client.PTTL(ctx, k).Val()
				mu.Lock()
				out[k] = keyState{dump: d, hasTTL: ttl != -1, ttl: ttl}
				mu.Unlock()
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// plantRepairFixture writes limiter keys with and without TTL, and
// unrelated keys without TTL that repair must never touch.
func plantRepairFixture(t *testing.T, c redis.UniversalClient) (broken []string) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("u%d", i)
		c.Set(ctx, "rl:fw:{"+id+"}", i, time.Minute) // healthy
		if i%3 == 0 {
			k := "rl:gi:{" + id + "}"
			c.Set(ctx, k, i, 0) // lost its TTL
			broken = append(broken, k)
		}
		if i%5 == 0 {
			k := "rl:tb:{" + id + "}"
			c.HSet(ctx, k, "tokens", "3.5", "ts", 1700000000000)
			broken = append(broken, k)
		}
		c.Set(ctx, "session:"+id, "keep", 0) // not a limiter key
	}
	// Another library's key without TTL: repaired too when its rule is known.
	c.Set(ctx, "limiter:10.0.0.1", 5, 0)
	broken = append(broken, "limiter:10.0.0.1")
	sort.Strings(broken)
	return broken
}

func TestRepairTTLFixesExactlyTheKeysWithoutTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	broken := plantRepairFixture(t, c)
	before := snapshot(t, c)

	reg := NewRegistry(Params{Limit: rate.Limit{Count: 100, Window: time.Minute}})
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: reg.All()})
	if err != nil {
		t.Fatal(err)
	}
	if st.Repaired != int64(len(broken)) || st.MissingTTL != int64(len(broken)) || st.Skipped != 0 || st.NoRule != 0 {
		t.Fatalf("stats %+v, want %d repaired", st, len(broken))
	}
	after := snapshot(t, c)
	if len(after) != len(before) {
		t.Fatalf("%d keys before, %d after", len(before), len(after))
	}
	isBroken := map[string]bool{}
	for _, k := range broken {
		isBroken[k] = true
	}
	for k, b := range before {
		a := after[k]
		if a.dump != b.dump {
			t.Errorf("%s: value changed", k)
		}
		switch {
		case isBroken[k]:
			if !a.hasTTL || a.ttl > time.Minute || a.ttl < 50*time.Second {
				t.Errorf("%s: TTL %v after repair, want about 1m", k, a.ttl)
			}
		case !b.hasTTL:
			if a.hasTTL {
				t.Errorf("%s: unrelated key got a TTL", k)
			}
		default:
			// Healthy keys keep their own TTL (only ever counting down).
			if a.ttl > b.ttl {
				t.Errorf("%s: TTL went from %v to %v", k, b.ttl, a.ttl)
			}
		}
	}
	// A second run finds nothing: the repair is idempotent.
	st, err = RepairTTL(ctx, c, RepairOptions{Schemas: reg.All()})
	if err != nil {
		t.Fatal(err)
	}
	if st.MissingTTL != 0 || st.Repaired != 0 {
		t.Fatalf("second run %+v", st)
	}
}

func TestRepairTTLSkipsKeysFixedMeanwhile(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	c.Set(ctx, "rl:fw:{a}", 1, 0)
	c.Set(ctx, "rl:fw:{b}", 2, 0)
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	schema, _ := reg.Lookup("redis-fixed-window")
	var hooked []string
	st, err := RepairTTL(ctx, c, RepairOptions{
		Schemas: []*Schema{schema},
		BeforeRepair: func(ctx context.Context, keys []string) {
			hooked = append(hooked, keys...)
			// A gateway opens a new window on "a" between scan and repair.
			c.Set(ctx, "rl:fw:{a}", 1, 5*time.Second)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hooked) != 2 {
		t.Fatalf("hook saw %v", hooked)
	}
	if st.Repaired != 1 || st.Skipped != 1 {
		t.Fatalf("stats %+v, want 1 repaired and 1 skipped", st)
	}
	if ttl := c.PTTL(ctx, "rl:fw:{a}").Val(); ttl > 5*time.Second {
		t.Errorf("the gateway's TTL was overwritten: %v", ttl)
	}
	if ttl := c.PTTL(ctx, "rl:fw:{b}").Val(); ttl < 50*time.Second {
		t.Errorf("b not repaired: %v", ttl)
	}
}

func TestRepairTTLDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	broken := plantRepairFixture(t, c)
	before := snapshot(t, c)
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 100, Window: time.Minute}})
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: reg.All(), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.MissingTTL != int64(len(broken)) || st.Repaired != 0 || !st.DryRun {
		t.Fatalf("stats %+v", st)
	}
	after := snapshot(t, c)
	for k, b := range before {
		if a := after[k]; a.dump != b.dump || a.hasTTL != b.hasTTL {
			t.Errorf("%s changed in a dry run", k)
		}
	}
}

func TestRepairTTLUnknownRuleAndMatch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	c.Set(ctx, "rl:fw:{a}", 1, 0)
	c.Set(ctx, "myrl:a", 1, 0)
	c.Set(ctx, "other", 1, 0)
	// Without --limit rlctl's own layouts have no known TTL: left alone.
	reg := NewRegistry(Params{})
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: reg.All()})
	if err != nil {
		t.Fatal(err)
	}
	if st.NoRule != 1 || st.Repaired != 0 {
		t.Fatalf("stats %+v", st)
	}
	if c.PTTL(ctx, "rl:fw:{a}").Val() != -1 {
		t.Fatal("key without a known rule was changed")
	}
	// An explicit pattern with a TTL narrows the walk; it never makes a
	// key that no layout claims a limiter's.
	st, err = RepairTTL(ctx, c, RepairOptions{Schemas: reg.All(), Match: "*", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if st.Repaired != 1 || st.Unclaimed != 2 || c.PTTL(ctx, "rl:fw:{a}").Val() <= 0 ||
		c.PTTL(ctx, "myrl:a").Val() != -1 || c.PTTL(ctx, "other").Val() != -1 {
		t.Fatalf("stats %+v", st)
	}
	// A layout the user describes claims the keys it names.
	mine, err := CustomSchema(CustomSpec{Name: "myrl", Pattern: "myrl:{id}"})
	if err != nil {
		t.Fatal(err)
	}
	st, err = RepairTTL(ctx, c, RepairOptions{Schemas: []*Schema{mine}, Match: "myrl:*", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if st.Repaired != 1 || st.Unclaimed != 0 || c.PTTL(ctx, "myrl:a").Val() <= 0 || c.PTTL(ctx, "other").Val() != -1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRepairTTLMatchLeavesUnclaimedKeysAlone: however broad the pattern,
// with or without a TTL given, only keys a layout claims get a TTL; the
// others are counted and named, never changed.
func TestRepairTTLMatchLeavesUnclaimedKeysAlone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	foreign := redistest.SeedForeign(t, c)
	for _, pattern := range []string{"*", "[^x]*", "[a-z]*", "*:*", "rl:*", "app:*"} {
		for _, ttl := range []time.Duration{0, time.Minute} {
			must(t, c.Set(ctx, "rl:fw:{u1}", 3, 0).Err())
			reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
			st, err := RepairTTL(ctx, c, RepairOptions{Schemas: reg.All(), Match: pattern, TTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			foreign.AssertUnchanged(t, c)
			if st.Unclaimed+st.NotFitting == 0 || len(st.LeftAlone) == 0 {
				t.Errorf("--match %q: nothing reported left alone: %+v", pattern, st)
			}
			if matches := globMatch(pattern, "rl:fw:{u1}"); matches != (st.Repaired == 1) {
				t.Errorf("--match %q: repaired %d limiter keys: %+v", pattern, st.Repaired, st)
			}
			if t.Failed() {
				t.FailNow()
			}
		}
	}
}

// TestRepairTTLChecksTheValue: a key whose name and type a layout claims
// but whose value does not fit it (rl:fw:notlimiter holding "plain", which
// rate-limit-redis's rl:<key> would claim) is another application's: left
// alone and counted, while real limiter keys beside it are repaired. A dry
// run reports the same without changing anything.
func TestRepairTTLChecksTheValue(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	notFit := map[string]func() error{
		"rl:fw:notlimiter": func() error { return c.Set(ctx, "rl:fw:notlimiter", "plain", 0).Err() },
		"rl:fw:{x}":        func() error { return c.Set(ctx, "rl:fw:{x}", "12abc", 0).Err() },
		"rl:gcra:{x}":      func() error { return c.Set(ctx, "rl:gcra:{x}", "soon", 0).Err() },
		"rl:tb:{x}":        func() error { return c.HSet(ctx, "rl:tb:{x}", "owner", "ops").Err() },
		"rl:tb:{y}":        func() error { return c.HSet(ctx, "rl:tb:{y}", "tokens", "many", "ts", 1).Err() },
		"rl:tb:{z}":        func() error { return c.HSet(ctx, "rl:tb:{z}", "tokens", 1, "ts", 1, "extra", 1).Err() },
		"limiter:page":     func() error { return c.Set(ctx, "limiter:page", "<html>", 0).Err() },
		"rate:card":        func() error { return c.Set(ctx, "rate:card", "visa", 0).Err() },
		"LIMITS:LIMITER/a/search/2/1/hour": func() error {
			return c.RPush(ctx, "LIMITS:LIMITER/a/search/2/1/hour", "x", "y").Err()
		},
		"LIMITS:LIMITER/b/search/2/1/hour": func() error { // longer than its amount
			return c.RPush(ctx, "LIMITS:LIMITER/b/search/2/1/hour", 1, 2, 3).Err()
		},
		"@upstash/ratelimit:u:100": func() error { return c.HSet(ctx, "@upstash/ratelimit:u:100", "req1", "one").Err() },
	}
	fit := map[string]func() error{
		"rl:fw:{ok}":   func() error { return c.Set(ctx, "rl:fw:{ok}", 3, 0).Err() },
		"rl:gcra:{ok}": func() error { return c.Set(ctx, "rl:gcra:{ok}", "1700000000000.125", 0).Err() },
		"rl:tb:{ok}": func() error {
			return c.HSet(ctx, "rl:tb:{ok}", "tokens", "0.10000000000000001", "ts", 1700000000000).Err()
		},
		"rl:10.0.0.1":     func() error { return c.Set(ctx, "rl:10.0.0.1", 5, 0).Err() },
		"rate:user":       func() error { return c.Set(ctx, "rate:user", "2.9e+08", 0).Err() },
		"limiter:1.2.3.4": func() error { return c.Set(ctx, "limiter:1.2.3.4", -1, 0).Err() },
		"LIMITS:LIMITER/c/search/2/1/hour": func() error {
			return c.RPush(ctx, "LIMITS:LIMITER/c/search/2/1/hour", "1795990000.5", "1795990001").Err()
		},
		"request_rate_limiter.{u}.tokens": func() error { return c.Set(ctx, "request_rate_limiter.{u}.tokens", "4", 0).Err() },
		"@upstash/ratelimit:u:101":        func() error { return c.HSet(ctx, "@upstash/ratelimit:u:101", "req1", "1", "req2", "-1").Err() },
	}
	var others []string
	for k, write := range notFit {
		must(t, write())
		others = append(others, k)
	}
	for _, write := range fit {
		must(t, write())
	}
	snap := redistest.TakeSnapshot(t, c, others...)
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	for _, dry := range []bool{true, false} {
		st, err := RepairTTL(ctx, c, RepairOptions{Schemas: reg.All(), DryRun: dry, SampleSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		snap.AssertUnchanged(t, c)
		if st.NotFitting != int64(len(notFit)) || st.MissingTTL != int64(len(fit)) || len(st.LeftAlone) != len(notFit) {
			t.Errorf("dry run %v: stats %+v; want %d left alone, %d to repair", dry, st, len(notFit), len(fit))
		}
		if !dry && st.Repaired != int64(len(fit)) {
			t.Errorf("repaired %d, want %d: %+v", st.Repaired, len(fit), st)
		}
	}
	for k := range fit {
		if ttl := c.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("%s: TTL %v, want it repaired", k, ttl)
		}
	}
}

// TestRepairTTLChecksTheValueAtTheMomentOfTheRepair: a key that stops
// fitting between the scan and the repair (another application wrote it
// meanwhile) is left alone, since the check runs in the script that sets
// the TTL.
func TestRepairTTLChecksTheValueAtTheMomentOfTheRepair(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	must(t, c.Set(ctx, "rl:fw:{a}", 1, 0).Err())
	must(t, c.Set(ctx, "rl:fw:{b}", 2, 0).Err())
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	st, err := RepairTTL(ctx, c, RepairOptions{
		Schemas: reg.All(),
		BeforeRepair: func(ctx context.Context, keys []string) {
			must(t, c.Set(ctx, "rl:fw:{a}", "taken over", 0).Err())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Repaired != 1 || st.NotFitting != 1 || c.PTTL(ctx, "rl:fw:{a}").Val() != -1 {
		t.Fatalf("stats %+v, TTL of a %v", st, c.PTTL(ctx, "rl:fw:{a}").Val())
	}
}

func TestRepairTTLStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	pipe := c.Pipeline()
	for i := 0; i < 5000; i++ {
		pipe.Set(ctx, fmt.Sprintf("rl:fw:{%d}", i), 1, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	pages := 0
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: reg.All(), Progress: func(RepairStats) {
		pages++
		cancel()
	}})
	if err == nil {
		t.Fatal("no error after cancel")
	}
	if pages != 1 || st.Repaired == 0 || st.Repaired >= 5000 {
		t.Fatalf("pages %d, stats %+v", pages, st)
	}
}

func TestPaceSchedulesFromStart(t *testing.T) {
	t.Parallel()
	// pace never waits when the work is behind schedule, and waits
	// (cancellably) when ahead of it.
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now().Add(-time.Hour)
	if err := pace(ctx, start, 100, 10); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := pace(ctx, time.Now(), 1000, 1); err == nil {
		t.Fatal("pace ahead of schedule ignored the cancelled context")
	}
}

// TestRepairTTLManyKeys crosses SCAN pages and script chunks: exactly the
// keys without TTL are repaired, whatever page or chunk they fall in.
func TestRepairTTLManyKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	pipe := c.Pipeline()
	want := map[string]bool{}
	for i := 0; i < 3000; i++ {
		k := fmt.Sprintf("rl:fw:{%d}", i)
		ttl := time.Hour
		if i%7 == 3 {
			ttl = 0
			want[k] = true
		}
		pipe.Set(ctx, k, i, ttl)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	rep, err := Audit(ctx, c, AuditOptions{Schemas: reg.All(), RefreshInterval: time.Millisecond, LatencyProbes: 1, SampleSize: 5000})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Check == CheckNoTTL {
			if f.Count != int64(len(want)) {
				t.Fatalf("audit counted %d without TTL, want %d", f.Count, len(want))
			}
			for _, k := range f.Sample {
				if !want[k] {
					t.Fatalf("audit sampled %s, which has a TTL", k)
				}
			}
		}
	}
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: reg.All(), SampleSize: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if st.Repaired != int64(len(want)) || len(st.Sample) != len(want) {
		t.Fatalf("stats %+v, want %d", st.Repaired, len(want))
	}
	for _, k := range st.Sample {
		if !want[k] {
			t.Fatalf("repaired %s, which had a TTL", k)
		}
	}
	after := snapshot(t, c)
	for k, s := range after {
		if want[k] && s.ttl > time.Minute {
			t.Errorf("%s: TTL %v, want the schema's 1m", k, s.ttl)
		}
		if !want[k] && s.ttl <= time.Minute {
			t.Errorf("%s: TTL %v changed", k, s.ttl)
		}
	}
}

// A key whose name and type fit two layouts (an Upstash token bucket of
// "user:42", a multi-region window of "user") gets the longer of their
// TTLs: a bucket that expired early would refill at once.
func TestRepairTTLAmbiguousKeyGetsTheLongerRule(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	const key = "@upstash/ratelimit:user:42"
	must(t, c.HSet(ctx, key, "refilledAt", time.Now().UnixMilli(), "tokens", 10).Err())
	// 100/min with a 500-token bucket: the bucket's rule is 5 min, the
	// window's 2 min + 1 s.
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 100, Window: time.Minute}, Burst: 500})
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: reg.All()})
	if err != nil {
		t.Fatal(err)
	}
	ttl := c.PTTL(ctx, key).Val()
	if st.Repaired != 1 || ttl <= 4*time.Minute || ttl > 5*time.Minute {
		t.Fatalf("repaired %d, TTL %v; want 1 repaired with about 5m", st.Repaired, ttl)
	}
}

// Python limits keys carry their window, so their TTL is known without
// --limit: the window for a fixed-window counter or a moving window's
// list, two for a sliding window's current counter.
func TestRepairTTLFromTheKeysOwnWindow(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	const fixed, sliding = "LIMITS:LIMITER/192.0.2.9/100/5/minute", "LIMITS:{LIMITER/192.0.2.9/5/30/second}"
	const moving = "LIMITS:LIMITER/192.0.2.9/search/10/1/hour" // a list
	must(t, c.Set(ctx, fixed, 7, 0).Err())
	must(t, c.Set(ctx, sliding, 2, 0).Err())
	must(t, c.RPush(ctx, moving, "1795990000.5").Err())
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: NewRegistry(Params{}).All()})
	if err != nil {
		t.Fatal(err)
	}
	if st.Repaired != 3 || st.NoRule != 0 {
		t.Fatalf("stats %+v; want all three repaired", st)
	}
	if ttl := c.PTTL(ctx, moving).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("%s: TTL %v; want its hour", moving, ttl)
	}
	if ttl := c.PTTL(ctx, fixed).Val(); ttl <= 4*time.Minute || ttl > 5*time.Minute {
		t.Errorf("%s: TTL %v; want its 5-minute window", fixed, ttl)
	}
	if ttl := c.PTTL(ctx, sliding).Val(); ttl <= 59*time.Second || ttl > time.Minute {
		t.Errorf("%s: TTL %v; want two 30-second windows", sliding, ttl)
	}
}

// TestRepairTTLLostReplyIsUnknownNotSkipped: Redis holds writes while a
// page is being repaired, so the reply is lost. go-redis used to send the
// calls again, find the TTLs rlctl itself had set (or set them on a late
// retry) and count them as "skipped: fixed meanwhile" or repaired. Now
// each call is sent once, and keys whose call got no answer are counted as
// unknown, with an error.
func TestRepairTTLLostReplyIsUnknownNotSkipped(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	// A client with a short read timeout and go-redis's default retries.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 300 * time.Millisecond, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	const n = 50
	for i := 0; i < n; i++ {
		must(t, c.Set(ctx, fmt.Sprintf("rl:fw:{%d}", i), 1, 0).Err())
	}
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: reg.All(), BeforeRepair: func(ctx context.Context, keys []string) {
		// Redis holds every write for 0.8s from now (scripts included) but
		// still takes connections: the repair is sent, and no answer comes
		// before the client gives up. Whether it ran is unknown (Redis drops
		// a paused client's commands when it disconnects; after a stall it
		// may run them), so nothing may be counted as skipped or repaired.
		must(t, admin.Do(context.Background(), "client", "pause", 800, "write").Err())
	}})
	if err == nil || st.Skipped != 0 || st.Unknown != n || st.Repaired != 0 {
		t.Fatalf("err %v, stats %+v; want an error and %d unknown, none skipped", err, st, n)
	}
}
