package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

const msec = time.Millisecond

// by is rec answered by path b, its decision time unknown (answered at
// recv), as a gateway's policy answers are.
func by(sent, recv time.Duration, o decision.Outcome, b decision.By) history.Record {
	r := rec(sent, 0, 0, o)
	r.Received, r.Decided, r.By = recv, history.NoTime, b
	return r
}

func wantMetrics(t *testing.T, m Metrics, want Metrics) {
	t.Helper()
	for name, v := range want {
		if got, ok := m[name]; !ok || math.Abs(got-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, v)
		}
	}
}

// A failover at 1s as a real election plays it: the old primary answers
// one request, then errors and the failure policy answer while the
// primary changes, a gateway refuses for the failover it detected, and
// the new primary decides again. Each figure is counted by hand.
func TestElectionFigures(t *testing.T) {
	t.Parallel()
	meta := history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"u"},
		Faults: []history.Fault{{At: time.Second, Action: "failover"}}}
	h := history.New(meta, 0)
	h.Append(rec(500*msec, 0, 0, decision.Allowed))
	for _, at := range []time.Duration{1000 * msec, 1010 * msec, 1020 * msec} {
		h.Append(by(at, at+msec, decision.Error, decision.ByUnknown))
	}
	// The old primary still answered this one before it stepped down: not
	// the recovery.
	h.Append(by(1025*msec, 1026*msec, decision.Allowed, decision.ByRedis))
	h.Append(by(1030*msec, 1031*msec, decision.Allowed, decision.ByFailOpen))
	h.Append(by(1040*msec, 1041*msec, decision.Allowed, decision.ByFailOpen))
	h.Append(by(1050*msec, 1051*msec, decision.Denied, decision.ByFailClosed))
	// The election's last error, answered at 1250ms.
	h.Append(by(1200*msec, 1250*msec, decision.Error, decision.ByUnknown))
	// The new primary's first answer.
	h.Append(by(1210*msec, 1212*msec, decision.Allowed, decision.ByRedis))
	// A gateway detected the failover: refused from 1300ms to 2291ms.
	h.Append(by(1300*msec, 1301*msec, decision.Denied, decision.ByFailoverDeny))
	h.Append(by(1700*msec, 1701*msec, decision.Denied, decision.ByFailoverDeny))
	h.Append(by(2290*msec, 2291*msec, decision.Denied, decision.ByFailoverDeny))
	// An error long after: another matter, not the election.
	h.Append(by(3000*msec, 3001*msec, decision.Error, decision.ByUnknown))

	wantMetrics(t, analyzed(t, h, Options{}).Metrics, Metrics{
		metric.ElectionErrors: 4, metric.ElectionFailOpen: 2, metric.ElectionFailClosed: 1, metric.ElectionMs: 250,
		metric.RecoverMs: 212, metric.FailoverDenied: 3, metric.FailoverDenyMs: 991, metric.FailoverDetectMs: 301,
	})
}

// A failover that disrupts nothing (the gateways swapped to another
// server between two requests) has an election of zero, recovers at the
// first answer after it and, with no detection, refuses nothing; a run
// without a failover has none of these figures.
func TestFailoverWithoutElection(t *testing.T) {
	t.Parallel()
	meta := history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"u"},
		Faults: []history.Fault{{At: time.Second, Action: "failover"}}}
	h := history.New(meta, 0)
	h.Append(rec(900*msec, 0, 0, decision.Allowed))
	h.Append(by(1003*msec, 1004*msec, decision.Allowed, decision.ByRedis))
	m := analyzed(t, h, Options{}).Metrics
	wantMetrics(t, m, Metrics{metric.ElectionErrors: 0, metric.ElectionFailOpen: 0, metric.ElectionFailClosed: 0, metric.ElectionMs: 0, metric.RecoverMs: 4, metric.FailoverDenied: 0})
	for _, name := range []string{metric.FailoverDenyMs, metric.FailoverDetectMs} {
		if v, ok := m[name]; ok {
			t.Errorf("%s = %v with no detection, want absent", name, v)
		}
	}

	meta.Faults = []history.Fault{{At: time.Second, For: time.Second, Action: "redis-down"}}
	h2 := history.New(meta, 0)
	h2.Append(rec(900*msec, 0, 0, decision.Allowed))
	m = analyzed(t, h2, Options{}).Metrics
	for _, name := range []string{metric.ElectionErrors, metric.ElectionFailOpen, metric.ElectionFailClosed, metric.ElectionMs, metric.FailoverDenied, metric.CountsLost} {
		if v, ok := m[name]; ok {
			t.Errorf("%s = %v without a failover, want absent", name, v)
		}
	}
}

// after_fault_ceiling on the two failovers the replicate option tells
// apart: a promoted replica without the counts admits a second quota in
// the window the old primary filled (2L), one that holds them admits
// nothing more until that window ends (L).
func TestAfterFaultCeilingAcrossPromotion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		kept  bool
		wantC float64
	}{{"counts lost", false, 10}, {"counts kept", true, 5}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			meta := history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"u"},
				Faults: []history.Fault{{At: time.Second, Action: "failover"}}}
			h := history.New(meta, 0)
			// Overload, 100/s: the old primary's window opened at 800ms and
			// admitted its five at once.
			count, opened := 0, 800*msec
			for at := 800 * msec; at < 2500*msec; at += 10 * msec {
				if at == time.Second && !tc.kept {
					count, opened = 0, at // an empty primary opens a new window
				}
				if at-opened >= time.Second {
					count, opened = 0, at
				}
				ok := count < 5
				if ok {
					count++
				}
				h.Append(rec(at, 0, 0, outcome(ok)))
			}
			wantMetrics(t, analyzed(t, h, Options{}).Metrics, Metrics{metric.AfterFaultCeiling: tc.wantC})
		})
	}
}

// Two failovers, each with its own election: the figures add the two
// elections' undecided requests and take the longer, for the run and for
// its one identity alike.
func TestElectionFiguresOfTwoFailovers(t *testing.T) {
	t.Parallel()
	meta := history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"u"},
		Faults: []history.Fault{{At: time.Second, Action: "failover"}, {At: 5 * time.Second, Action: "kill-primary"}}}
	h := history.New(meta, 0)
	h.Append(by(1000*msec, 1001*msec, decision.Error, decision.ByUnknown))
	h.Append(by(1010*msec, 1100*msec, decision.Error, decision.ByUnknown))
	h.Append(by(2000*msec, 2001*msec, decision.Allowed, decision.ByRedis))
	h.Append(by(5000*msec, 5001*msec, decision.Error, decision.ByUnknown))
	h.Append(by(5500*msec, 5501*msec, decision.Allowed, decision.ByFailOpen))
	h.Append(by(6000*msec, 6200*msec, decision.Error, decision.ByUnknown))
	h.Append(by(6300*msec, 6301*msec, decision.Allowed, decision.ByRedis))
	res := analyzed(t, h, Options{})
	want := Metrics{metric.ElectionErrors: 4, metric.ElectionFailOpen: 1, metric.ElectionMs: 1200}
	wantMetrics(t, res.Metrics, want)
	if len(res.PerIdentityFailover) != 1 {
		t.Fatalf("%d identities' failover figures, want 1", len(res.PerIdentityFailover))
	}
	wantMetrics(t, res.PerIdentityFailover[0].Metrics, want)
}

// A failover whose election outlasts a window (Fault.Answered 2.5s after
// it began) is counted to one window after the new primary took its
// first write: an old primary still taking some gateways' writes late in
// the election (a split brain) admitted five the new one never saw, and
// the new one admits five more in the same window.
func TestAfterFaultCeilingCoversALongElection(t *testing.T) {
	t.Parallel()
	meta := history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"u"},
		Faults: []history.Fault{{At: time.Second, Action: "failover", Stopped: time.Second, Answered: 3500 * msec}}}
	h := history.New(meta, 0)
	for at := 500 * msec; at < 550*msec; at += 10 * msec {
		h.Append(rec(at, 0, 0, decision.Allowed))
	}
	for at := 3300 * msec; at < 3350*msec; at += 10 * msec {
		h.Append(by(at, at+msec, decision.Allowed, decision.ByRedis)) // the old primary
	}
	for at := 3500 * msec; at < 3550*msec; at += 10 * msec {
		h.Append(by(at, at+msec, decision.Allowed, decision.ByRedis)) // the new one
	}
	wantMetrics(t, analyzed(t, h, Options{}).Metrics, Metrics{metric.AfterFaultCeiling: 10})
}

// A graceful Sentinel failover's new primary takes writes at once while
// gateways still on the old one write there until it is demoted
// (Fault.Demoted, 2.5s later): the windows after_fault_ceiling looks at
// run to one W after the demotion.
func TestAfterFaultCeilingCoversTheOldPrimarysDemotion(t *testing.T) {
	t.Parallel()
	meta := history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"u"},
		Faults: []history.Fault{{At: time.Second, Action: "failover", Answered: 1010 * msec, Demoted: 3500 * msec}}}
	h := history.New(meta, 0)
	for at := 3300 * msec; at < 3350*msec; at += 10 * msec {
		h.Append(by(at, at+msec, decision.Allowed, decision.ByRedis)) // on the old primary
	}
	for at := 3500 * msec; at < 3550*msec; at += 10 * msec {
		h.Append(by(at, at+msec, decision.Allowed, decision.ByRedis)) // moved to the new one
	}
	wantMetrics(t, analyzed(t, h, Options{}).Metrics, Metrics{metric.AfterFaultCeiling: 10})
}
