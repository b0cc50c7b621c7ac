package verify

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
)

const replicateDoc = `name: replicate
limit: 20/1s
target:
  kind: simulated
  algorithm: redis-sliding-log
  gateways: 2
  redis: %s
  timeout: 1s
  endpoints: [{name: api, share: 1, on_error: closed}]%s
traffic: {rate: 100/s, duration: 2s, identities: 2}
faults: [{at: 1200ms, action: failover}]
`

// heldAtFailover is, per the history, what the old primary's sliding logs
// held when the failover came: each identity's admissions in the window
// before it.
func heldAtFailover(h *history.History) float64 {
	at, w := h.Meta.Faults[0].At, h.Meta.Limit.Window
	var n float64
	for i := range h.Len() {
		if h.Outcome(i) == decision.Allowed && h.By(i) == decision.ByRedis && h.Received(i) < at && h.Sent(i) > at-w {
			n++
		}
	}
	return n
}

// lostSlack is the slack of the test's bracket of counts_lost: 3
// admissions, about 75ms of the 40/s the two identities' limits admit.
const lostSlack = 75 * time.Millisecond

// runCountingLost runs doc, three times in all (calmtest.Retry) while the
// failover's reading of the counters failed: that reading has a second,
// and a machine stalled that long measured nothing of the design. Each
// run is runCalm's with lostSlack for its stalls: a binary stalled longer
// moved the lag, the reading and the switch against the history's times
// by more than the bracket allows.
func runCountingLost(t *testing.T, doc string) *Outcome {
	t.Helper()
	var out *Outcome
	calmtest.Retry(t, 3, func(int) string {
		out, _ = runCalm(t, parse(t, doc), lostSlack)
		if i := slices.IndexFunc(out.Report.Notes, func(n string) bool { return strings.Contains(n, "counts_lost is not measured") }); i >= 0 {
			return out.Report.Notes[i]
		}
		return ""
	})
	return out
}

// replicate: 1 on redis: spawn runs on a real primary with a real replica
// and promotes it at the failover: the promoted replica holds every count
// (counts_lost 0, the cap holds), where the same design without it loses
// what the old primary held — counts_lost, read from Redis, agrees with
// the history's own count of what the windows held. The latency cost is
// logged, not judged (it depends on the machine).
func TestReplicateHoldsAcrossRealPromotion(t *testing.T) {
	t.Parallel()
	with := runCountingLost(t, fmt.Sprintf(replicateDoc, "spawn", "\n  replicate: 1\n  replicate_timeout: 500ms"))
	// The failover on spawn is real, and a replica left alone has every
	// count within a millisecond; replica_lag cuts it off for the window
	// before the failover, as a lagging replica would be.
	without := runCountingLost(t, strings.Replace(fmt.Sprintf(replicateDoc, "spawn", ""), "action: failover}", "action: failover, replica_lag: 1s}", 1))
	t.Logf("p99 %gms with replicate: 1, %gms without; after_fault_ceiling %g vs %g; counts_lost %g vs %g; notes %q",
		measured(t, with, metric.P99), measured(t, without, metric.P99),
		measured(t, with, metric.AfterFaultCeiling), measured(t, without, metric.AfterFaultCeiling),
		measured(t, with, metric.CountsLost), measured(t, without, metric.CountsLost), with.Saved.Notes)

	for _, want := range []string{"waited for 1 of the primary's 1 replicas", "failover: a real one", "counts_lost was read from Redis"} {
		if !slices.ContainsFunc(with.Saved.Notes, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("with replicate: no note saying %q in %q", want, with.Saved.Notes)
		}
	}
	if v := measured(t, with, metric.AfterFaultCeiling); v > 20 {
		t.Errorf("with replicate: after_fault_ceiling %g, want the cap (20) held across the promotion", v)
	}
	// A script run in the instant between the reading and the promotion
	// may still be on its way to the replica: its count is lost, but its
	// WAIT fails and the request is refused, so the cap holds (above).
	if v, w := measured(t, with, metric.CountsLost), measured(t, without, metric.CountsLost); 4*v > w {
		t.Errorf("with replicate: counts_lost %g, want next to nothing beside the %g lost without it", v, w)
	}
	if v := measured(t, without, metric.AfterFaultCeiling); v <= 20 {
		t.Errorf("without replicate: after_fault_ceiling %g, want a second quota through the empty primary", v)
	}
	if !slices.ContainsFunc(without.Report.Notes, func(n string) bool { return strings.Contains(n, "the new primary lacked") }) {
		t.Errorf("without replicate: no note on the lost counts in %q", without.Report.Notes)
	}
	lost, held := measured(t, without, metric.CountsLost), heldAtFailover(without.History)
	// The lag takes hold a moment after it is asked for, 1s before the
	// failover's planned offset (the replication user disabled, the links
	// cut; the history says when): what was admitted in that moment may
	// still have reached the replica.
	f := without.History.Meta.Faults[0]
	if asked := f.Planned - time.Second; f.Held < asked || f.Held > f.At {
		t.Fatalf("without replicate: the lag took hold at %v; want after it was asked for at %v and before the failover at %v", f.Held, asked, f.At)
	}
	late := float64(admittedBetween(without.History, f.Planned-time.Second, f.Held))
	// counts_lost reads the old primary once the failover's hook starts
	// (its planned offset) and the switch comes after (At): what was
	// admitted in between is not in it either (a lower bound, as its
	// note says).
	reading := float64(admittedBetween(without.History, f.Planned, f.At))
	// The new primary is read once the election is over, when the fault's
	// Read says: a log entry that aged out of the window by then is not
	// counted as lost either.
	if f.Read < max(f.At, f.Answered) {
		t.Fatalf("without replicate: the new primary was read at %v, before the failover at %v and its election's end at %v", f.Read, f.At, f.Answered)
	}
	w := without.History.Meta.Limit.Window
	aged := float64(admittedBetween(without.History, f.At-w, f.Read-w))
	t.Logf("without replicate: the lag asked for at %v took hold at %v, %g admitted meanwhile; %g admitted between the failover's reading (from %v) and its switch at %v; %g aged out by the new primary's reading at %v (the election ended at %v)",
		f.Planned-time.Second, f.Held, late, reading, f.Planned, f.At, aged, f.Read, f.Answered)
	late += reading + aged
	if held < 30 || lost < held-3-late || lost > held+3 {
		t.Errorf("without replicate: counts_lost %g read from Redis, but the history says the windows held %g at the failover (%g admitted before the lag took hold at %v, between the reading and the switch, or aging out by the second reading)", lost, held, late, f.Held)
	}
	// Identity by identity, as read from Redis: every identity has its
	// figure, and they add up to the run's.
	for _, out := range []*Outcome{with, without} {
		var sum float64
		ids := out.Report.Failover.Identities
		for _, id := range ids {
			v, ok := id.Metrics[metric.CountsLost]
			if !ok {
				t.Errorf("%s: identity %s has no counts_lost", out.Report.Name, id.Name)
			}
			sum += v
		}
		if len(ids) != len(out.History.Meta.Identities) || sum != measured(t, out, metric.CountsLost) {
			t.Errorf("%s: %d identities' counts_lost add up to %g; the run's %g over %d identities", out.Report.Name,
				len(ids), sum, measured(t, out, metric.CountsLost), len(out.History.Meta.Identities))
		}
	}
}

// On the embedded Redis, which has no replication, replicate is emulated
// and says so: no WAIT, and a stand-in holding a copy of the counts.
func TestReplicateEmulatedOnEmbedded(t *testing.T) {
	t.Parallel()
	out := run(t, parse(t, fmt.Sprintf(replicateDoc, "embedded", "\n  replicate: 1")))
	if !slices.ContainsFunc(out.Saved.Notes, func(n string) bool {
		return strings.Contains(n, "replicate 1 was emulated, not run: the embedded Redis has no replication")
	}) {
		t.Errorf("no emulation note in %q", out.Saved.Notes)
	}
	if v := measured(t, out, metric.AfterFaultCeiling); v > 20 {
		t.Errorf("after_fault_ceiling %g, want the cap (20) held by the stand-in holding the counts", v)
	}
	if v := measured(t, out, metric.CountsLost); v > 1 {
		t.Errorf("counts_lost %g, want 0 on a stand-in given a copy", v)
	}
}
