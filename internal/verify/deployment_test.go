package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/redistest/thirdgw"
	"github.com/rlctl/rlctl/internal/score"
)

// The tests in this file run rlctl against a deployment it did not write:
// an independent gateway around a third-party limiter library, on its own
// go-redis client, with rlctl acting on that gateway's Redis only as the
// command line allows.

// deploymentScenario is an http target at url whose gateways keep their
// counters in redisURL under schema, with faults (YAML lines, indented).
func deploymentScenario(url, redisURL, schema, limit, duration, faults string) string {
	doc := fmt.Sprintf(`name: deployment
limit: %s
max_error_rate: 1
target:
  kind: http
  urls: [%s]
  identity: {header: X-API-Key}
  request_timeout: 2s
  redis: %s
  schema: %s
traffic:
  rate: 200/s
  duration: %s
  identities: 3
`, limit, url, redisURL, schema, duration)
	if faults != "" {
		doc += "faults:\n" + faults
	}
	return doc
}

// gatewayLog is a thirdgw gateway's own log as the ground-truth checks
// read it.
func gatewayLog(g *thirdgw.Gateway) *decisionLog {
	l := &decisionLog{}
	for _, d := range g.Log() {
		// What the gateway answered is its decision: a request it let
		// through while Redis failed (fail-open, 200) is an admission.
		e := logEntry{id: d.ID, at: d.At, outcome: "error"}
		switch d.Status {
		case 200:
			e.outcome = "allowed"
		case 429:
			e.outcome, e.retry = "denied", true
		}
		l.add(e)
	}
	return l
}

// Each fault on a deployment rlctl did not start needs its flag on the
// command line: without it the scenario is refused before any request
// (exit 2, naming the flag), whatever the file says.
func TestDeploymentFaultsNeedTheirFlag(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	g := thirdgw.Start(t, thirdgw.Options{Client: srv.Client(t), Library: thirdgw.RedisRate, Limit: 10, Window: time.Second})
	sentinelURL := "redis+sentinel://127.0.0.1:1/mymaster"
	for _, tt := range []struct {
		fault, redis, flag string
		toxiproxy          bool
	}{
		{"failover", sentinelURL, "--allow-failover", false},
		{"redis-stall\n    for: 200ms", srv.URL(), "--allow-faults", false},
		{"redis-reset", srv.URL(), "--allow-faults", false},
		{"redis-down\n    for: 200ms", srv.URL(), "--allow-faults", true},
	} {
		doc := deploymentScenario(g.URL, tt.redis, "go-redis-rate", "10/1s", "1s", "  - at: 500ms\n    action: "+tt.fault+"\n")
		if tt.toxiproxy {
			doc = strings.Replace(doc, "  schema:", "  toxiproxy: {api: http://127.0.0.1:1, proxy: redis}\n  schema:", 1)
		}
		_, err := Run(t.Context(), parse(t, doc), Options{})
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), tt.flag) {
			t.Errorf("%s without %s: %v (exit %d); want a usage error naming the flag", strings.Fields(tt.fault)[0], tt.flag, err, exitcode.Of(err))
		}
	}
	if n := len(g.Log()); n != 0 {
		t.Errorf("the gateway decided %d requests: a refused scenario sent traffic", n)
	}
}

// A limiter that counts denied requests (ulule/limiter's fixed window:
// INCR first, compare after) holds more than rlctl saw admitted, and
// counter_drift says by how much; GCRA (go-redis/redis_rate) counts only
// what it admits. Both run on a real redis-server that also holds another
// application's keys, through a redis-stall and a redis-reset rlctl
// applies with --allow-faults, and every foreign key is byte-identical
// afterwards.
func TestCounterDriftAndFaultsOnAStandaloneDeployment(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		lib    thirdgw.Library
		schema string
		drift  bool
	}{
		{thirdgw.Ulule, "ulule-limiter", true},
		{thirdgw.RedisRate, "go-redis-rate", false},
	} {
		t.Run(string(tt.lib), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			c := srv.Client(t)
			foreign := redistest.SeedForeign(t, c)
			g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: tt.lib, Limit: 20, Window: time.Hour})
			faults := "  - {at: 500ms, for: 300ms, action: redis-stall}\n"
			out, err := Run(t.Context(), parse(t, deploymentScenario(g.URL, srv.URL(), tt.schema, "20/1h", "1500ms", faults)), Options{AllowFaults: true})
			if err != nil {
				t.Fatal(err)
			}
			drift := measured(t, out, metric.CounterDrift)
			if tt.drift != (drift > 0) {
				t.Errorf("counter_drift %g; the library counts denied requests: %v", drift, tt.drift)
			}
			stats, err := c.Info(context.Background(), "commandstats").Result()
			if err != nil || !strings.Contains(stats, "cmdstat_client|pause:calls=1") {
				t.Errorf("the stall was not applied: %v", err)
			}
			foreign.AssertUnchanged(t, c)
		})
	}
}

// redis-reset deletes the run identities' counters, and only those the
// run itself began: on a fresh deployment ulule's counters restart at the
// reset (each ends below the requests its identity sent); run again within
// the hour, the identities' counters held counts before the run, and the
// reset leaves them alone (each ends at what it held plus every request
// of the second run).
// Another application's keys are byte-identical throughout.
func TestResetOnADeploymentDeletesOnlyTheRunsOwnCounters(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	foreign := redistest.SeedForeign(t, c)
	g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: thirdgw.Ulule, Limit: 150, Window: time.Hour})
	doc := deploymentScenario(g.URL, srv.URL(), "ulule-limiter", "150/1h", "1500ms", "  - {at: 700ms, action: redis-reset}\n")
	// Every counter stays below its limit, so the claim is that every
	// request was decided, not a cap never pressed.
	doc += "thresholds: [errors == 0]\n"
	held := map[string]int64{} // each counter after the last run
	for run, reset := range []bool{true, false} {
		before := map[string]counted{}
		for _, id := range []string{"user-0", "user-1", "user-2"} {
			before[id] = countedBy(g, id)
		}
		out, err := Run(t.Context(), parse(t, doc), Options{AllowFaults: true})
		if err != nil {
			t.Fatal(err)
		}
		left := slices.ContainsFunc(out.Report.Notes, func(n string) bool { return strings.Contains(n, "left 3 identities' keys alone") })
		for _, id := range out.History.Meta.Identities {
			n, err := c.Get(t.Context(), "limiter:"+id).Int64()
			if err != nil {
				t.Fatal(err)
			}
			now := countedBy(g, id)
			if reset && n >= now.sure+now.maybe {
				t.Errorf("run %d: %s's counter is %d after %d requests: the reset did not delete it", run, id, n, now.sure+now.maybe)
			}
			// A decision whose Redis call failed (the gateway's 200ms
			// ran out on a busy machine) may or may not have counted.
			least := held[id] + now.sure - before[id].sure
			most := least + now.maybe - before[id].maybe
			if !reset && (n < least || n > most || !left) {
				t.Errorf("run %d: %s's counter is %d, want the %d it held plus this run's %d requests, %d of them failed in Redis (note %v): a counter from before the run was reset", run, id, n, held[id], most-held[id], most-least, left)
			}
			held[id] = n
		}
		foreign.AssertUnchanged(t, c)
	}
}

// A failover rlctl applies to the deployment of an independent gateway
// (go-redis/redis_rate behind go-redis's FailoverClient on a Sentinel it
// started itself) is seen from both sides: the election is in the history
// and its figures in the report, the gateway's own log lies within rlctl's
// ceilings, and the Redis's other keys are byte-identical on the new
// primary.
func TestFailoverOfAnHTTPTargetsSentinel(t *testing.T) {
	t.Parallel()
	d := redistest.Spawn(t, redisconn.SpawnOptions{Replicas: 1, Sentinels: 3})
	var addrs []string
	for _, s := range d.Sentinels {
		addrs = append(addrs, s.Addr)
	}
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: d.MasterName, SentinelAddrs: addrs})
	t.Cleanup(func() { c.Close() })
	seeded := redistest.SeedForeign(t, c)
	// The keys are compared on the replica the failover promotes, as it
	// holds them (a replica's encoding of a value may differ from its
	// primary's, byte for byte).
	if err := c.Do(t.Context(), "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	cfg, err := redisconn.Parse(redisconn.Options{URL: d.URL(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := cfg.SentinelShard(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	replica := redis.NewClient(&redis.Options{Addr: sh.Replicas[0]})
	t.Cleanup(func() { replica.Close() })
	foreign := redistest.TakeSnapshot(t, replica, seeded.Keys()...)
	g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: thirdgw.RedisRate, Limit: 20, Window: time.Second, FailOpen: true})
	faults := "  - {at: 1s, action: failover}\n"
	sc := parse(t, deploymentScenario(g.URL, d.URL(), "go-redis-rate", "20/1s", "4s", faults))
	out, err := Run(t.Context(), sc, Options{AllowFailover: true})
	if err != nil {
		t.Fatal(err)
	}
	f := out.History.Meta.Faults[0]
	if f.Action != design.FaultFailover || f.Stopped == 0 || f.Answered <= f.Stopped {
		t.Fatalf("the election was not recorded: %+v; notes %q", f, out.Report.Notes)
	}
	if _, ok := out.Report.Result.Metrics[metric.ElectionMs]; !ok {
		t.Errorf("no %s for a failover of an http target's Redis", metric.ElectionMs)
	}
	// The report's charts shade the election from these.
	if rf := out.Report.Faults; len(rf) != 1 || rf[0].ElectionToMs <= rf[0].ElectionFromMs {
		t.Errorf("the report's fault %+v carries no election to shade", rf)
	}
	checkAgainstLog(t, out, gatewayLog(g), time.Second)
	foreign.AssertUnchanged(t, c)
}

// On a Cluster, the failover acts on the shard holding the run
// identities' counters (CLUSTER FAILOVER on its replica): ulule/limiter's
// gateway behind go-redis's ClusterClient follows it, the election is in
// the history and the gateway's log lies within rlctl's ceilings. Each
// identity fires one burst at the start, so the counters stand still until
// the failover: counts_lost, read through ulule's layout, equals the
// counters read directly from the old primary before it and the new one
// after.
func TestFailoverOfAnHTTPTargetsCluster(t *testing.T) {
	t.Parallel()
	d := redistest.Spawn(t, redisconn.SpawnOptions{Cluster: true, ClusterReplicas: 1})
	var addrs []string
	for _, s := range d.Servers {
		addrs = append(addrs, s.Addr)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { c.Close() })
	// The gateway's client knows the slots and has a connection to every
	// primary before the bursts: 240 requests at once on a cold client
	// (slots unknown, no connection yet) on a loaded machine all outlasted
	// the decision's timeout and failed open, and the run measured nothing.
	if err := c.ForEachMaster(t.Context(), func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: thirdgw.Ulule, Limit: 40, Window: time.Hour, FailOpen: true, Timeout: time.Second})
	// 4.5s after the failover: a loaded machine's election outlasted 1.5s.
	doc := strings.Replace(deploymentScenario(g.URL, d.URL(), "ulule-limiter", "40/1h", "6s", "  - {at: 1500ms, action: failover}\n"),
		"  rate: 200/s\n", "  rate: 1000/s\n  pattern: burst\n  burst_size: 80\n", 1)
	ids := []string{"user-0", "user-1", "user-2"}
	// The counters as the old primaries hold them, read once the bursts
	// are over (the gateway's log still for 200ms) and before the failover.
	held := make(chan map[string]int64, 1)
	go func() {
		last, still := -1, time.Now()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if n := len(g.Log()); n != last {
				last, still = n, time.Now()
			} else if n > 1 && time.Since(still) >= 200*time.Millisecond {
				break
			}
		}
		held <- directCounts(t, c, ids)
	}()
	out, err := Run(t.Context(), parse(t, doc), Options{AllowFailover: true})
	if err != nil {
		t.Fatal(err)
	}
	f := out.History.Meta.Faults[0]
	if f.Stopped == 0 || f.Answered <= f.Stopped || f.Shard == "" {
		t.Fatalf("the election was not recorded: %+v; notes %q", f, out.Report.Notes)
	}
	checkAgainstLog(t, out, gatewayLog(g), time.Hour)
	before, after := <-held, directCounts(t, c, ids)
	var want float64
	for _, id := range ids {
		if n := before[id] - after[id]; n > 0 {
			want += float64(n)
		}
	}
	if got, ok := out.Report.Result.Metrics[metric.CountsLost]; !ok || got != want {
		t.Errorf("counts_lost %g (reported %v); the old primary held %v before, the new one %v after", got, ok, before, after)
	}
	t.Logf("counts_lost %g; before %v, after %v; election %s..%s", want, before, after, f.Stopped, f.Answered)
}

// counted is how many of a gateway's decisions for an identity surely
// reached its Redis counter (decided without an error), and how many may
// have (the library's call failed: its command may have run, or not).
type counted struct{ sure, maybe int64 }

func countedBy(g *thirdgw.Gateway, id string) counted {
	var c counted
	for _, d := range g.Log() {
		switch {
		case d.ID != id:
		case d.Err != "":
			c.maybe++
		default:
			c.sure++
		}
	}
	return c
}

// directCounts reads ulule's counter of each identity with GET, on the
// primary serving its slot now.
func directCounts(t *testing.T, c *redis.ClusterClient, ids []string) map[string]int64 {
	out := map[string]int64{}
	for _, id := range ids {
		n, err := c.Get(context.Background(), "limiter:"+id).Int64()
		if err != nil && err != redis.Nil {
			t.Errorf("GET limiter:%s: %v", id, err)
		}
		out[id] = n
	}
	return out
}

// A failover the deployment cannot carry out (a Sentinel whose master has
// no replica) leaves a run without the fault: whatever its thresholds say
// of the figures, it is not measured (exit 1), naming why, never PASS.
func TestUnappliedFailoverIsNotMeasured(t *testing.T) {
	t.Parallel()
	sen := redistest.StartSentinel(t, redistest.Start(t))
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sen.MasterName, SentinelAddrs: []string{sen.Addr}})
	t.Cleanup(func() { c.Close() })
	g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: thirdgw.RedisRate, Limit: 20, Window: time.Second})
	doc := deploymentScenario(g.URL, sen.URL, "go-redis-rate", "20/1s", "1500ms", "  - {at: 500ms, action: failover}\n")
	out, err := Run(t.Context(), parse(t, doc), Options{AllowFailover: true})
	r := out.Report
	if r.Status != score.StatusError || r.Verdict != score.NotMeasured || exitcode.Of(err) != exitcode.Failed || !strings.Contains(r.Error, "no replica") {
		t.Fatalf("status %s, verdict %q, exit %d, error %q: want not measured, exit 1, naming the missing replica", r.Status, r.Verdict, exitcode.Of(err), r.Error)
	}
}
