package deploy_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault/deploy"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// userDeployment spawns a topology and hands the test only its URL, as a
// user's own deployment reaches rlctl: nothing here uses the spawned
// processes' handles.
func userDeployment(t *testing.T, opts redisconn.SpawnOptions) *redisconn.Config {
	t.Helper()
	d := redistest.Spawn(t, opts)
	cfg, err := redisconn.Parse(redisconn.Options{URL: d.URL(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func client(t *testing.T, cfg *redisconn.Config) redis.UniversalClient {
	t.Helper()
	c := cfg.NewClient()
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// checkElection requires a whole election: the old primary stopped, the
// deployment named the replica, which then took writes.
func checkElection(t *testing.T, e deploy.Election, sh redisconn.Shard) {
	t.Helper()
	if e.Old != sh.Primary {
		t.Errorf("old primary %q, want %q", e.Old, sh.Primary)
	}
	if !slices.Contains(sh.Replicas, e.New) {
		t.Errorf("new primary %q, want one of the replicas %v", e.New, sh.Replicas)
	}
	if e.Stopped.IsZero() || e.Switched.IsZero() || e.Answered.IsZero() {
		t.Fatalf("election not seen whole: %+v", e)
	}
	if e.Answered.Before(e.Switched) {
		t.Errorf("the new primary took writes (%s) before the deployment named it (%s)", e.Answered, e.Switched)
	}
}

// servedAfter snapshots keys on the node that will serve each of them once
// the failover of shard is over: its replica for the keys in shard, their
// primary for the others. A set's or hash's DUMP bytes follow its
// server's hash seed, so only the same process's bytes can be compared;
// the promoted replica holds the copy the keys will be read from.
func servedAfter(t *testing.T, cfg *redisconn.Config, shard redisconn.Shard, keys []string) []*redistest.Snapshot {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	byNode := map[string][]string{}
	var order []string
	for _, k := range keys {
		addr := shard.Replicas[0]
		if cfg.Mode() == redisconn.ModeCluster {
			sh, err := cfg.ClusterShard(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if sh.ID != shard.ID {
				addr = sh.Primary
			}
		}
		if _, ok := byNode[addr]; !ok {
			order = append(order, addr)
		}
		byNode[addr] = append(byNode[addr], k)
	}
	var out []*redistest.Snapshot
	for _, addr := range order {
		n := redis.NewClient(&redis.Options{Addr: addr, OnConnect: func(ctx context.Context, cn *redis.Conn) error {
			if cfg.Mode() == redisconn.ModeCluster {
				return cn.ReadOnly(ctx).Err() // a Cluster replica serves reads only after READONLY
			}
			return nil
		}})
		t.Cleanup(func() { n.Close() })
		for _, k := range byNode[addr] { // replication is asynchronous
			for n.Exists(ctx, k).Val() != 1 {
				if ctx.Err() != nil {
					t.Fatalf("%s never reached %s", k, addr)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		out = append(out, redistest.TakeSnapshot(t, n, byNode[addr]...))
	}
	return out
}

func assertAll(t *testing.T, snaps []*redistest.Snapshot, c redis.UniversalClient) {
	t.Helper()
	for _, s := range snaps {
		s.AssertUnchanged(t, c)
	}
}

// stallAndReset applies the faults that keep the primary — a WRITE stall
// on every primary, then a reset of alice's ulule keys — and requires the
// other application's keys (foreign, seeded through c) unchanged after
// each, and bob's counter kept.
func stallAndReset(t *testing.T, ctx context.Context, c redis.UniversalClient, foreign *redistest.Snapshot) {
	t.Helper()
	store, err := ulredis.NewStoreWithOptions(c, limiter.StoreOptions{Prefix: "limiter"})
	if err != nil {
		t.Fatal(err)
	}
	l := limiter.New(store, limiter.Rate{Period: time.Hour, Limit: 10})
	for _, id := range []string{"alice", "bob"} {
		if _, err := l.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	bob := redistest.TakeSnapshot(t, c, "limiter:bob")
	undo, err := deploy.Stall(ctx, c, time.Hour, deploy.StallWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	foreign.AssertUnchanged(t, c)
	s, err := keyspace.NewRegistry(keyspace.Params{Limit: rate.Limit{Count: 10, Window: time.Hour}}).Lookup(keyspace.SchemaUlule)
	if err != nil {
		t.Fatal(err)
	}
	res, err := deploy.ResetIdentities(ctx, c, s, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, []string{"limiter:alice"}) {
		t.Errorf("reset of alice: %+v", res)
	}
	bob.AssertUnchanged(t, c)
	foreign.AssertUnchanged(t, c)
}

// On a Sentinel deployment holding another application's keys: a stall,
// a reset and a failover, each leaving those keys byte-identical, and the
// failover's election observed whole.
func TestFaultsOnASentinelDeployment(t *testing.T) {
	t.Parallel()
	cfg := userDeployment(t, redisconn.SpawnOptions{Replicas: 1, Sentinels: 3})
	c := client(t, cfg)
	ctx := ctxFor(t, 40*time.Second)
	seeded := redistest.SeedForeign(t, c)
	stallAndReset(t, ctx, c, seeded)
	sh, err := cfg.SentinelShard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	foreign := servedAfter(t, cfg, sh, seeded.Keys())

	o, err := deploy.Observe(ctx, cfg, deploy.ObserveOptions{Probe: "rlctl:probe:election"})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	shards, err := deploy.Failover(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 1 || shards[0].Primary != o.OldShard().Primary {
		t.Fatalf("failover acted on %+v, the observer watches %+v", shards, o.OldShard())
	}
	// Took closes as soon as the new primary takes a write, long before
	// Sentinel demotes the old one.
	select {
	case <-o.Took():
	case <-time.After(20 * time.Second):
		t.Fatal("Took never closed")
	}
	tookAt := time.Now()
	// Sentinel turns the old primary into a replica only once it has
	// reported the wrong role for a while: Stopped comes seconds after
	// Answered, and the test waits for it.
	e := o.Wait()
	if e.Answered.IsZero() || e.Answered.After(tookAt) {
		t.Errorf("Took closed at %s, the new primary took a write at %s", tookAt.Format("15:04:05.000"), e.Answered.Format("15:04:05.000"))
	}
	t.Logf("failover at %s: stopped +%s, switched +%s, notified +%s, answered +%s, %d errors", began.Format("15:04:05.000"),
		e.Stopped.Sub(began), e.Switched.Sub(began), e.Notified.Sub(began), e.Answered.Sub(began), len(e.Errors))
	checkElection(t, e, shards[0])
	if e.Notified.IsZero() {
		t.Error("no +switch-master arrived")
	}
	// The probe is the run's own key and is gone; the other application's
	// keys are on the new primary byte for byte.
	if n, err := c.Exists(ctx, "rlctl:probe:election").Result(); err != nil || n != 0 {
		t.Errorf("probe key left behind: %d, %v", n, err)
	}
	assertAll(t, foreign, c)
}

// The same on a Cluster, where the failover is the shard's of a key's,
// and the watch writes nothing.
func TestFaultsOnAClusterDeployment(t *testing.T) {
	t.Parallel()
	cfg := userDeployment(t, redisconn.SpawnOptions{Cluster: true, ClusterReplicas: 1})
	c := client(t, cfg)
	ctx := ctxFor(t, 40*time.Second)
	seeded := redistest.SeedForeign(t, c)
	stallAndReset(t, ctx, c, seeded)
	cc := c.(*redis.ClusterClient)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		stats, err := m.Info(ctx, "commandstats").Result()
		if err == nil && !strings.Contains(stats, "cmdstat_client|pause:calls=1") {
			t.Errorf("%s was not paused", m.Options().Addr)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	key := "limiter:{alice}"
	before, err := cfg.ClusterShard(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	foreign := servedAfter(t, cfg, before, seeded.Keys())
	if _, err := deploy.Observe(ctx, cfg, deploy.ObserveOptions{Key: key, Probe: "rlctl:probe:{bob}"}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("a probe outside the watched slot: %v", err)
	}
	o, err := deploy.Observe(ctx, cfg, deploy.ObserveOptions{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	shards, err := deploy.Failover(ctx, cfg, nil, key, "limiter:{alice}:other")
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 1 || shards[0].ID != before.ID {
		t.Fatalf("failover acted on %+v, want only the shard of %s (%s)", shards, key, before.Primary)
	}
	e := o.Wait()
	t.Logf("failover at %s: stopped +%s, switched +%s, answered +%s, %d errors", began.Format("15:04:05.000"), e.Stopped.Sub(began), e.Switched.Sub(began), e.Answered.Sub(began), len(e.Errors))
	checkElection(t, e, before)
	after, err := cfg.ClusterShard(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if after.Primary != e.New {
		t.Errorf("the slot's owner is %s, the observer saw %s", after.Primary, e.New)
	}
	assertAll(t, foreign, c)
}

func TestFailoverRefusals(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg, err := redisconn.Parse(redisconn.Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 10*time.Second)
	if _, err := deploy.Failover(ctx, cfg, nil); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "Sentinel") {
		t.Errorf("failover of one server: %v", err)
	}
	if _, err := deploy.Observe(ctx, cfg, deploy.ObserveOptions{}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("observe one server: %v", err)
	}
}

// A WRITE stall holds a write back for the pause and lets reads through.
func TestStallHoldsWritesAndKeepsForeignKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	foreign := redistest.SeedForeign(t, c)
	ctx := ctxFor(t, 20*time.Second)
	const pause = 700 * time.Millisecond
	start := time.Now()
	if _, err := deploy.Stall(ctx, c, pause, deploy.StallWrite); err != nil {
		t.Fatal(err)
	}
	var wrote atomic.Bool
	done := make(chan error, 1)
	go func() {
		err := c.Set(ctx, "rlctl:stall-probe", "x", time.Minute).Err()
		wrote.Store(true)
		done <- err
	}()
	// A read is not held back by a WRITE pause: it is answered while the
	// write still waits.
	reader := srv.Client(t)
	if _, err := reader.Get(ctx, "app:visits").Result(); err != nil {
		t.Fatal(err)
	}
	if wrote.Load() {
		t.Fatal("the write was answered before a read sent after it, during a WRITE pause")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < pause {
		t.Fatalf("a write during a %s pause was answered %s after it began", pause, took)
	}
	c.Del(ctx, "rlctl:stall-probe")
	foreign.AssertUnchanged(t, c)
}

func TestStallWriteUndoneEarly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxFor(t, 20*time.Second)
	undo, err := deploy.Stall(ctx, c, time.Hour, deploy.StallWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	// Were the hour-long pause still on, this would wait until ctx ends.
	if err := c.Set(ctx, "rlctl:stall-probe", "x", time.Minute).Err(); err != nil {
		t.Fatalf("SET after the undo: %v", err)
	}
}

// A stall of ALL holds back reads too, and cannot be ended early: its undo
// says so rather than pretend.
func TestStallAllHoldsReads(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxFor(t, 20*time.Second)
	const pause = 500 * time.Millisecond
	start := time.Now()
	undo, err := deploy.Stall(ctx, c, pause, deploy.StallAll)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client(t).Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < pause {
		t.Fatalf("a PING during a %s pause of ALL was answered %s after it began", pause, took)
	}
	if err := undo(ctx); err == nil || !strings.Contains(err.Error(), "cannot be ended early") {
		t.Fatalf("undo of a pause of ALL: %v", err)
	}
}

func TestStallRefusals(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxFor(t, 5*time.Second)
	for _, tc := range []struct {
		d    time.Duration
		mode deploy.StallMode
	}{{time.Second, "READ"}, {0, deploy.StallWrite}} {
		if _, err := deploy.Stall(ctx, c, tc.d, tc.mode); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("Stall(%s, %q): %v", tc.d, tc.mode, err)
		}
	}
}

func TestResetDeletesOnlyTheIdentitiesKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxFor(t, 10*time.Second)
	store, err := ulredis.NewStoreWithOptions(c, limiter.StoreOptions{Prefix: "limiter"})
	if err != nil {
		t.Fatal(err)
	}
	l := limiter.New(store, limiter.Rate{Period: time.Hour, Limit: 10})
	for _, id := range []string{"alice", "bob", "carol"} {
		if _, err := l.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// Named as ulule's key of an identity, but another application's.
	c.Set(ctx, "limiter:dave", "not a counter", 0)
	foreign := redistest.SeedForeign(t, c)
	kept := redistest.TakeSnapshot(t, c, "limiter:carol", "limiter:dave")
	reg := keyspace.NewRegistry(keyspace.Params{Limit: rate.Limit{Count: 10, Window: time.Hour}})
	s, err := reg.Lookup(keyspace.SchemaUlule)
	if err != nil {
		t.Fatal(err)
	}
	res, err := deploy.ResetIdentities(ctx, c, s, []string{"alice", "bob", "dave"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, []string{"limiter:alice", "limiter:bob"}) || !slices.Equal(res.LeftAlone, []string{"limiter:dave"}) {
		t.Errorf("reset: %+v", res)
	}
	if n, _ := c.Exists(ctx, "limiter:alice", "limiter:bob").Result(); n != 0 {
		t.Errorf("%d of the reset keys still exist", n)
	}
	kept.AssertUnchanged(t, c)
	foreign.AssertUnchanged(t, c)
}
