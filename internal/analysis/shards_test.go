package analysis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// shardedHistory is a failover at 1s of shard n1 on a Cluster of three
// shards: identity a (n1) sees the election, b (n2) one error inside the
// election's span and one after it, c (n3) nothing after the fault, d's
// shard is unknown. Endpoint 0 is login, 1 feed.
func shardedHistory(shards []string) *history.History {
	meta := history.Meta{Limit: rate.Limit{Count: 2, Window: time.Second},
		Identities: []string{"a", "b", "c", "d"}, Shards: shards, Endpoints: []string{"login", "feed"},
		Faults: []history.Fault{{At: time.Second, Action: "failover", Shard: "n1", Answered: 1300 * msec}}}
	h := history.New(meta, 0)
	add := func(sent time.Duration, id uint32, ep uint8, o decision.Outcome, b decision.By) {
		r := by(sent, sent+msec, o, b)
		r.Identity, r.Endpoint = id, ep
		h.Append(r)
	}
	add(800*msec, 2, 0, decision.Error, decision.ByUnknown) // c, before the fault
	add(1000*msec, 0, 0, decision.Error, decision.ByUnknown)
	add(1050*msec, 1, 0, decision.Allowed, decision.ByRedis)
	add(1050*msec, 3, 1, decision.Error, decision.ByUnknown) // d: no known shard
	add(1100*msec, 0, 0, decision.Error, decision.ByUnknown)
	add(1100*msec, 2, 0, decision.Allowed, decision.ByRedis)
	add(1150*msec, 0, 0, decision.Allowed, decision.ByFailOpen)
	add(1200*msec, 0, 0, decision.Error, decision.ByUnknown)
	for _, at := range []time.Duration{1400 * msec, 1410 * msec, 1420 * msec} {
		add(at, 0, 0, decision.Allowed, decision.ByRedis)
	}
	add(1500*msec, 1, 0, decision.Allowed, decision.ByRedis)
	add(1600*msec, 2, 1, decision.Denied, decision.ByFailoverDeny)
	// b: inside the election's span (to 1.3s + 1s), then after it.
	add(1900*msec, 1, 1, decision.Error, decision.ByUnknown)
	add(2500*msec, 1, 1, decision.Error, decision.ByUnknown)
	return h
}

// TestShardFigures counts by hand what each shard's identities saw of a
// failover of shard n1, and the failed_shard_*/other_shards_* sums.
func TestShardFigures(t *testing.T) {
	t.Parallel()
	res := analyzed(t, shardedHistory([]string{"n1", "n2", "n3", ""}), Options{})
	wantMetrics(t, res.Metrics, Metrics{
		metric.FailedShardElectionUndecided: 4, metric.FailedShardAfterFaultCeiling: 4, metric.FailedShardAfterFaultCeilingUpper: 4,
		metric.OtherShardsElectionUndecided: 1, metric.OtherShardsAfterFaultCeiling: 2, metric.OtherShardsAfterFaultCeilingUpper: 2,
	})
	want := []struct {
		shard  string
		failed bool
		m      Metrics
	}{
		{"n1", true, Metrics{metric.ElectionErrors: 3, metric.ElectionFailOpen: 1, metric.ElectionFailClosed: 0, metric.AfterFaultCeiling: 4}},
		{"n2", false, Metrics{metric.ElectionErrors: 1, metric.ElectionFailOpen: 0, metric.AfterFaultCeiling: 2}},
		{"n3", false, Metrics{metric.ElectionErrors: 0, metric.ElectionFailOpen: 0, metric.AfterFaultCeiling: 1}},
	}
	if len(res.PerShard) != len(want) {
		t.Fatalf("PerShard = %+v, want %d shards", res.PerShard, len(want))
	}
	for i, w := range want {
		got := res.PerShard[i]
		if got.Shard != w.shard || got.FailedOver != w.failed || got.Identities != 1 {
			t.Errorf("shard %d = %s (failed over %v, %d identities), want %s (%v, 1)", i, got.Shard, got.FailedOver, got.Identities, w.shard, w.failed)
		}
		wantMetrics(t, got.Metrics, w.m)
	}
}

// TestShardFiguresNeedShards checks that without the identities' shards
// (not a Cluster) the split is absent, not zero: a threshold on it then
// fails as unmeasured instead of passing.
func TestShardFiguresNeedShards(t *testing.T) {
	t.Parallel()
	res := analyzed(t, shardedHistory(nil), Options{})
	if res.PerShard != nil {
		t.Errorf("PerShard = %+v without shards", res.PerShard)
	}
	for _, name := range []string{metric.FailedShardElectionUndecided, metric.FailedShardAfterFaultCeiling, metric.FailedShardAfterFaultCeilingUpper,
		metric.OtherShardsElectionUndecided, metric.OtherShardsAfterFaultCeiling, metric.OtherShardsAfterFaultCeilingUpper} {
		if v, ok := res.Metrics[name]; ok {
			t.Errorf("%s = %v without shards, want absent", name, v)
		}
	}
}

// TestEndpointFigures counts each endpoint's election and detection by
// hand: login saw shard n1's election, feed the other errors (chained
// within 1s of each other) and the one failover-deny.
func TestEndpointFigures(t *testing.T) {
	t.Parallel()
	res := analyzed(t, shardedHistory(nil), Options{})
	want := map[string]Metrics{
		// login's election ends at 1200ms; a's answer from Redis at 1401ms.
		// Every admission went through login: a's four after the fault.
		"login": {metric.ElectionErrors: 3, metric.ElectionFailOpen: 1, metric.ElectionFailClosed: 0, metric.ElectionMs: 201, metric.FailoverDenied: 0, metric.RecoverMs: 401, metric.AfterFaultCeiling: 4},
		// feed's ends at 2500ms, and Redis decided none of its requests after.
		"feed": {metric.ElectionErrors: 3, metric.ElectionFailOpen: 0, metric.ElectionFailClosed: 0, metric.ElectionMs: 1501, metric.FailoverDenied: 1, metric.FailoverDenyMs: 1, metric.AfterFaultCeiling: 0},
	}
	if len(res.PerEndpoint) != 2 {
		t.Fatalf("PerEndpoint = %+v, want login and feed", res.PerEndpoint)
	}
	for _, e := range res.PerEndpoint {
		wantMetrics(t, e.Metrics, want[e.Endpoint])
	}
	for name, m := range map[string]Metrics{"login deny": res.PerEndpoint[0].Metrics, "feed recover": res.PerEndpoint[1].Metrics} {
		k := metric.FailoverDenyMs
		if strings.HasSuffix(name, "recover") {
			k = metric.RecoverMs
		}
		if v, ok := m[k]; ok {
			t.Errorf("%s: %s = %v, want absent (nothing to time)", name, k, v)
		}
	}
}

// TestIdentityFailoverFigures counts each identity's own election by hand:
// a's chain of three errors and a fail-open (to 1201ms), b's two errors
// chained within 1s of each other and of the fault (to 2501ms), c's one
// failover-deny and no undecided request after the fault, d's one error;
// and each one's admissions after the fault.
func TestIdentityFailoverFigures(t *testing.T) {
	t.Parallel()
	res := analyzed(t, shardedHistory(nil), Options{})
	want := map[string]Metrics{
		"a": {metric.ElectionErrors: 3, metric.ElectionFailOpen: 1, metric.ElectionFailClosed: 0, metric.ElectionMs: 201, metric.FailoverDenied: 0, metric.AfterFaultCeiling: 4, metric.RecoverMs: 401},
		"b": {metric.ElectionErrors: 2, metric.ElectionFailOpen: 0, metric.ElectionMs: 1501, metric.FailoverDenied: 0, metric.AfterFaultCeiling: 2},
		// c saw no election: Redis answered it at 1101ms.
		"c": {metric.ElectionErrors: 0, metric.ElectionMs: 0, metric.FailoverDenied: 1, metric.FailoverDenyMs: 1, metric.AfterFaultCeiling: 1, metric.RecoverMs: 101},
		"d": {metric.ElectionErrors: 1, metric.ElectionMs: 51, metric.FailoverDenied: 0},
	}
	if len(res.PerIdentityFailover) != 4 {
		t.Fatalf("PerIdentityFailover = %+v, want a, b, c and d", res.PerIdentityFailover)
	}
	for i, id := range res.PerIdentityFailover {
		if id.Identity != []string{"a", "b", "c", "d"}[i] {
			t.Errorf("identity %d is %s: not in the run's order", i, id.Identity)
		}
		wantMetrics(t, id.Metrics, want[id.Identity])
		// b's and d's requests after their elections were not decided by
		// Redis: they never recovered within the run.
		if _, ok := id.Metrics[metric.RecoverMs]; ok == (id.Identity == "b" || id.Identity == "d") {
			t.Errorf("%s: recover_ms present %v", id.Identity, ok)
		}
	}
	if res := analyzed(t, history.New(history.Meta{Identities: []string{"a"}}, 0), Options{}); res.PerIdentityFailover != nil {
		t.Errorf("without a failover: %+v", res.PerIdentityFailover)
	}
}

// Past MaxFailoverIdentities only the worst identities are listed, still
// in the run's order: here the one that admitted after the fault and the
// one that saw an error in the election, both at the end of the run's list.
func TestIdentityFailoverFiguresKeepTheWorst(t *testing.T) {
	t.Parallel()
	n := MaxFailoverIdentities + 5
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("u%d", i)
	}
	h := history.New(history.Meta{Limit: rate.Limit{Count: 2, Window: time.Second}, Identities: ids,
		Faults: []history.Fault{{At: 3 * time.Second, Action: "kill-primary"}}}, 0)
	for i := range n - 2 {
		r := by(500*msec, 501*msec, decision.Allowed, decision.ByRedis) // windows before the fault
		r.Identity = uint32(i)
		h.Append(r)
	}
	errRec := by(3100*msec, 3101*msec, decision.Error, decision.ByUnknown)
	errRec.Identity = uint32(n - 2)
	h.Append(errRec)
	okRec := by(3200*msec, 3201*msec, decision.Allowed, decision.ByRedis)
	okRec.Identity = uint32(n - 1)
	h.Append(okRec)
	got := analyzed(t, h, Options{}).PerIdentityFailover
	if len(got) != MaxFailoverIdentities {
		t.Fatalf("%d identities listed, want %d", len(got), MaxFailoverIdentities)
	}
	if a, b := got[len(got)-2], got[len(got)-1]; a.Identity != ids[n-2] || b.Identity != ids[n-1] ||
		a.Metrics[metric.ElectionErrors] != 1 || b.Metrics[metric.AfterFaultCeiling] != 1 {
		t.Errorf("the worst are not kept in the run's order: last two %+v, %+v", a, b)
	}
	for i := 1; i < len(got); i++ {
		var x, y int
		fmt.Sscanf(got[i-1].Identity, "u%d", &x)
		fmt.Sscanf(got[i].Identity, "u%d", &y)
		if x >= y {
			t.Fatalf("%s listed before %s", got[i-1].Identity, got[i].Identity)
		}
	}
}

// Each endpoint's after_fault_ceiling counts the same windows as the
// scenario's, over its own admissions: with one endpoint the two agree;
// split between two, neither exceeds the scenario's and together they
// reach it (a window's admissions are one endpoint's or the other's).
func TestEndpointAfterFaultCeilingAgreesWithTheRun(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 14))
	iterations := 200
	if raceEnabled {
		iterations = 60
	}
	for iter := range iterations {
		tr := randomRun(rng)
		meta := tr.h.Meta
		meta.Faults = append(slices.Clone(meta.Faults), history.Fault{At: time.Duration(rng.Int64N(int64(4 * meta.Limit.Window))), Action: "failover"})
		meta.Endpoints = []string{"login", "feed"}
		one, two := history.New(meta, tr.h.Len()), history.New(meta, tr.h.Len())
		for i := range tr.h.Len() {
			r := tr.h.At(i)
			one.Append(r)
			r.Endpoint = uint8(rng.IntN(2))
			two.Append(r)
		}
		res := analyzed(t, one, Options{})
		if got, want := res.PerEndpoint[0].Metrics[metric.AfterFaultCeiling], res.Metrics[metric.AfterFaultCeiling]; got != want {
			t.Fatalf("iteration %d: one endpoint's after_fault_ceiling %g, the run's %g\n%v", iter, got, want, records(one))
		}
		res = analyzed(t, two, Options{})
		login, feed := res.PerEndpoint[0].Metrics[metric.AfterFaultCeiling], res.PerEndpoint[1].Metrics[metric.AfterFaultCeiling]
		if run := res.Metrics[metric.AfterFaultCeiling]; max(login, feed) > run || login+feed < run {
			t.Fatalf("iteration %d: endpoints' after_fault_ceiling %g and %g against the run's %g\n%v", iter, login, feed, run, records(two))
		}
	}
}

// Endpoints past Meta's are listed by number up to the last one that had
// an undecided or a failover-deny answer, and no further.
func TestEndpointFiguresPastMeta(t *testing.T) {
	t.Parallel()
	h := history.New(history.Meta{Limit: rate.Limit{Count: 2, Window: time.Second}, Identities: []string{"a"}, Endpoints: []string{"login"},
		Faults: []history.Fault{{At: time.Second, Action: "failover"}}}, 0)
	deny := by(1100*msec, 1101*msec, decision.Denied, decision.ByFailoverDeny)
	deny.Endpoint = 3
	h.Append(deny)
	ok := by(1200*msec, 1201*msec, decision.Allowed, decision.ByRedis)
	ok.Endpoint = 5 // decided by Redis: no failover answer
	h.Append(ok)
	var names []string
	for _, e := range analyzed(t, h, Options{}).PerEndpoint {
		names = append(names, e.Endpoint)
	}
	if want := []string{"login", "#1", "#2", "#3"}; !slices.Equal(names, want) {
		t.Errorf("endpoints %v, want %v", names, want)
	}
}
