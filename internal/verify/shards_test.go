package verify

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/threshold"
	"github.com/rlctl/rlctl/scenarios"
)

// builtin loads the built-in scenario in file.
func builtin(t *testing.T, file string) *scenario.Scenario {
	t.Helper()
	b, err := fs.ReadFile(scenarios.FS, file)
	if err != nil {
		t.Fatal(err)
	}
	scs, err := scenario.Parse(b, file)
	if err != nil {
		t.Fatal(err)
	}
	return scs[0]
}

// TestClusterScenarioSkippedElsewhere: a scenario that requires a Cluster
// is skipped up front on the embedded Redis, on spawn (no server is
// started) and on a standalone URL, in one line saying what to run
// instead, without an error; a Cluster URL does not skip it.
func TestClusterScenarioSkippedElsewhere(t *testing.T) {
	t.Parallel()
	sc := builtin(t, "26-cluster-shard-failover.yaml")
	for _, spec := range []string{"", "embedded", "spawn", "spawn-sentinel", "redis://:hunter2@127.0.0.1:1"} {
		out, err := Run(context.Background(), sc, Options{Redis: spec})
		if err != nil {
			t.Errorf("--redis %q: %v", spec, err)
			continue
		}
		r := out.Report
		if r.Status != score.StatusSkipped || out.History != nil {
			t.Errorf("--redis %q: status %s (history %v), want skipped before anything ran", spec, r.Status, out.History != nil)
		}
		if !strings.HasPrefix(r.Error, "needs a Redis Cluster") || !strings.HasSuffix(r.Error, "run with --redis spawn-cluster") || strings.Contains(r.Error, "\n") {
			t.Errorf("--redis %q: reason %q, want one line naming what to run", spec, r.Error)
		}
		if strings.Contains(r.Error, "hunter2") {
			t.Errorf("the reason shows the password: %q", r.Error)
		}
	}
	for _, spec := range []string{"spawn-cluster", "redis+cluster://127.0.0.1:7000"} {
		if why := unmet(sc, spec); why != "" {
			t.Errorf("%s is a Cluster, yet: %s", spec, why)
		}
	}
}

// clusterCounters reads, after a run and from the node that is primary for
// each identity's slot now, that identity's sliding log's length (one
// entry per admission within the window) and shard.
type clusterCounters struct {
	mu      sync.Mutex
	primary map[string]redisconn.Shard
	count   map[string]int64
	err     error
}

func (cc *clusterCounters) read(ids []string) func(context.Context, *redisconn.Config) {
	return func(ctx context.Context, cfg *redisconn.Config) {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		cc.primary, cc.count = map[string]redisconn.Shard{}, map[string]int64{}
		for _, id := range ids {
			var sh redisconn.Shard
			var err error
			// Right after a failover the old primary may still list
			// itself; wait until a node answers for the slot.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if sh, err = cfg.ClusterShard(ctx, "{"+id+"}"); err == nil || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				cc.err = err
				return
			}
			c := cfg.NodeClient(sh.Primary, false)
			n, err := c.ZCard(ctx, "rl:sl:{"+id+"}").Result()
			c.Close()
			if err != nil {
				cc.err = fmt.Errorf("%s on %s: %w", id, sh.Primary, err)
				return
			}
			cc.primary[id], cc.count[id] = sh, n
		}
	}
}

// perIdentity counts, per identity, the requests the limiter itself
// admitted (not a failure policy) and those Redis did not answer: errors,
// and what a failure policy decided after a timeout or a cut connection.
// Its script may have run all the same, so those may have counted.
func perIdentity(h *history.History) (admitted, unanswered map[string]int64) {
	admitted, unanswered = map[string]int64{}, map[string]int64{}
	for i := range h.Len() {
		id := h.Meta.Identities[h.Identity(i)]
		switch {
		case h.Outcome(i) == decision.Allowed && h.By(i) == decision.ByRedis:
			admitted[id]++
		case h.Outcome(i) == decision.Error, h.By(i) == decision.ByFailOpen, h.By(i) == decision.ByFailClosed, h.By(i) == decision.ByFallback:
			unanswered[id]++
		}
	}
	return admitted, unanswered
}

// TestClusterShardFailoverAgainstRedis runs the built-in scenario's shape
// on a spawned Cluster (three primaries, a replica each) with a limit
// never reached and a window longer than the run, so every admission is
// one entry of its identity's log in Redis, and holds the
// history's shards and counts against what Redis holds after the run:
//   - the history names three shards, two identities on each, and the
//     failover acted on the shard of the first identity;
//   - that shard's identities are now served by its promoted replica, the
//     old primary demoted beside it, and it lacks counts (the held-back
//     second's), no more than were admitted from the lag's start until the
//     new primary took its first write;
//   - every other identity is served by the primary it had at the start,
//     whose counter holds every admission: untouched.
//
// The per-shard figures agree: the failed shard's identities saw the
// election or lost counts, the others' undecided count is what their
// records hold.
func TestClusterShardFailoverAgainstRedis(t *testing.T) {
	t.Parallel()
	redistest.Binary(t)
	sc := builtin(t, "26-cluster-shard-failover.yaml")
	sc.Limit.Count = 1_000_000 // never reached: every admission counts once
	sc.Limit.Window = time.Minute
	// A cap of a million would hold on the traffic alone (score's pressed
	// check): the run claims what it measures, an election that ended.
	election, err := threshold.Parse("election < 30s")
	if err != nil {
		t.Fatal(err)
	}
	sc.Thresholds = []threshold.Threshold{election}
	sc.Shows = design.ShowsHolds
	sc.MaxErrorRate = 1
	ids := []string{"user-0", "user-1", "user-2", "user-3", "user-4", "user-5"}
	var cc clusterCounters
	out, err := Run(context.Background(), sc, Options{Redis: "spawn-cluster", AfterRun: cc.read(ids)})
	if err != nil {
		t.Fatalf("run: %v (notes %v)", err, out.Saved.Notes)
	}
	if cc.err != nil {
		t.Fatalf("read the counters back: %v", cc.err)
	}
	h := out.History
	f := h.Meta.Faults[0]
	if len(h.Meta.Shards) != len(ids) || f.Shard == "" || f.Answered <= f.At {
		t.Fatalf("shards %q, fault %+v: want a shard per identity and the failover's shard and election (notes %v)", h.Meta.Shards, f, out.Saved.Notes)
	}
	onShard := map[string]int{}
	for _, s := range h.Meta.Shards {
		onShard[s]++
	}
	if len(onShard) != 3 || slices.ContainsFunc(h.Meta.Shards, func(s string) bool { return onShard[s] != 2 }) {
		t.Fatalf("identities per shard %v, want two on each of three", onShard)
	}
	if h.Meta.Shards[0] != f.Shard {
		t.Fatalf("the failover acted on %s, but the first identity was on %s", f.Shard, h.Meta.Shards[0])
	}
	admitted, unanswered := perIdentity(h)
	for k, id := range h.Meta.Identities {
		start, now, n := h.Meta.Shards[k], cc.primary[id], cc.count[id]
		if start != f.Shard {
			if now.Primary != start {
				t.Errorf("%s: served by %s now, %s at the start: its shard did not fail over", id, now.Primary, start)
			}
			if n < admitted[id] || n > admitted[id]+unanswered[id] {
				t.Errorf("%s (untouched shard %s): Redis counted %d, the limiter admitted %d (+%d Redis did not answer)", id, start, n, admitted[id], unanswered[id])
			}
			continue
		}
		if now.Primary == start || !slices.Contains(now.Replicas, start) {
			t.Errorf("%s: served by %s now (replicas %v), want the promoted replica with the old primary %s demoted beside it", id, now.Primary, now.Replicas, start)
		}
		lost := admitted[id] - n
		// The replica_lag began at its own planned offset, 1s before the
		// failover's; the failover itself may be applied later than planned.
		inLag := admittedOf(h, k, f.Planned-time.Second, f.Answered+100*time.Millisecond)
		if lost <= 0 || lost > inLag {
			t.Errorf("%s (failed shard): Redis counted %d of %d admitted: %d lost, want some and at most the %d admitted from the lag's start to the new primary", id, n, admitted[id], lost, inLag)
		}
		t.Logf("%s on the failed shard: %d admitted, %d on the promoted node", id, admitted[id], n)
	}
	r := out.Report
	if r.Failover == nil || len(r.Failover.Shards) != 3 {
		t.Fatalf("report failover %+v, want three shards", r.Failover)
	}
	for _, p := range r.Failover.Shards {
		if p.FailedOver != (p.Name == f.Shard) || p.Identities != 2 {
			t.Errorf("shard %s: failed over %v with %d identities", p.Name, p.FailedOver, p.Identities)
		}
	}
	if v, ok := r.Metrics[metric.OtherShardsElectionUndecided]; !ok {
		t.Errorf("%s not measured", metric.OtherShardsElectionUndecided)
	} else {
		t.Logf("other shards: %v undecided during the election; failed shard %v; counts_lost %v", v, r.Metrics[metric.FailedShardElectionUndecided], r.Metrics[metric.CountsLost])
	}
}

// admittedOf counts identity k's admissions by the limiter answered in
// [from, to].
func admittedOf(h *history.History, k int, from, to time.Duration) int64 {
	var n int64
	for i := range h.Len() {
		if int(h.Identity(i)) == k && h.Outcome(i) == decision.Allowed && h.By(i) == decision.ByRedis && h.Received(i) >= from && h.Sent(i) <= to {
			n++
		}
	}
	return n
}

// TestBuiltinClusterScenarioPasses runs the built-in scenario as it is on
// a spawned Cluster: its thresholds hold (the failed shard lost counts and
// admitted a second quota, the other shards saw nothing and kept their
// limit), measured, not skipped. A run in which the test binary itself
// stalled past calm (a loaded machine: a make test saw 48 requests on the
// other shards go undecided during the election) is run again, three
// times in all.
func TestBuiltinClusterScenarioPasses(t *testing.T) {
	t.Parallel()
	redistest.Binary(t)
	const calm = 100 * time.Millisecond
	var out *Outcome
	var err error
	calmtest.Retry(t, 3, func(int) string {
		if out != nil && out.History != nil {
			out.History.Close()
		}
		watch := calmtest.Watch()
		out, err = Run(context.Background(), builtin(t, "26-cluster-shard-failover.yaml"), Options{Redis: "spawn-cluster"})
		if stalled := watch(); out != nil && out.Report.Status != score.StatusPass && stalled > calm {
			return fmt.Sprintf("status %s while the test binary stalled %v (a busy machine)", out.Report.Status, stalled)
		}
		return ""
	})
	if err != nil {
		t.Fatalf("run: %v (notes %v)", err, out.Saved.Notes)
	}
	r := out.Report
	for _, th := range r.Thresholds {
		if th.Observed != nil {
			t.Logf("%s: %s (observed %v)", th.Expr, th.Status, *th.Observed)
		}
	}
	if r.Status != score.StatusPass {
		t.Fatalf("status %s (%s), notes %v", r.Status, r.Error, r.Notes)
	}
}

// A suite whose every scenario was skipped measured nothing: it is no
// pass, and exits 2 (nothing here could run), while a skip beside a
// measured scenario changes nothing.
func TestSuiteOfOnlySkippedScenariosIsNoPass(t *testing.T) {
	t.Parallel()
	skipped := builtin(t, "26-cluster-shard-failover.yaml")
	rep, code := RunSuite(context.Background(), []*scenario.Scenario{skipped}, SuiteOptions{})
	if rep.Status == score.StatusPass || code != exitcode.Usage {
		t.Fatalf("only skipped: status %s, exit %d; want no pass and exit %d", rep.Status, code, exitcode.Usage)
	}
	// 15 requests against a limit of 10: the limit is reached, so the
	// cap is a measurement (score's pressed check).
	measured := parse(t, `name: measured
limit: 10/1s
target: {algorithm: redis-fixed-window, gateways: 2, timeout: 1s}
traffic: {rate: 50/s, duration: 300ms}
thresholds: [ceiling <= limit]
`)
	rep, code = RunSuite(context.Background(), []*scenario.Scenario{skipped, measured}, SuiteOptions{})
	if rep.Status != score.StatusPass || code != exitcode.OK {
		t.Fatalf("a skip beside a pass: status %s, exit %d; want pass, exit 0", rep.Status, code)
	}
}
