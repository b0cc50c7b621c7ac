package score

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/threshold"
)

func ths(t *testing.T, exprs ...string) []threshold.Threshold {
	t.Helper()
	var out []threshold.Threshold
	for _, e := range exprs {
		th, err := threshold.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, th)
	}
	return out
}

// claim is a scenario of 20/1s that claims its cap holds.
func claim(t *testing.T, exprs ...string) Claim {
	return Claim{Name: "s", Shows: design.ShowsHolds, Kind: KindSimulated, Limit: rate.Limit{Count: 20, Window: time.Second},
		Thresholds: ths(t, exprs...), MaxErrorRate: 0.01}
}

// measured are the figures of a run that sent 1000 requests and admitted
// up to its limit.
func measured() Facts {
	return Facts{Metrics: map[string]float64{
		metric.Requests: 1000, metric.Allowed: 300, metric.Denied: 700, metric.Ceiling: 20, metric.CeilingUpper: 20,
	}}
}

func failedCheck(v Verdict) string {
	for _, c := range v.Checks {
		if !c.Held {
			return c.Name
		}
	}
	return ""
}

// Every check of the validity table fails the run it names, with its
// reason and exit code, and holds on a run that measured what it claims:
// each case is a run as an attacker or a broken target would produce.
func TestValidityTable(t *testing.T) {
	tests := []struct {
		name   string
		check  string
		claim  func(*Claim)
		facts  func(*Facts)
		code   exitcode.Code
		reason string
	}{
		{"interrupted", "complete", nil, func(f *Facts) { f.Interrupted, f.Ran, f.Planned = true, 1200*time.Millisecond, 3*time.Second },
			exitcode.Interrupted, "interrupted after 1.2s of 3s"},
		{"script left running", "released", func(c *Claim) { c.Kind = KindRedisScript }, func(f *Facts) {
			f.Stuck = "the script could not be killed: UNKILLABLE Sorry the script already executed write commands"
		}, exitcode.Unreachable, "UNKILLABLE"},
		{"failover refused", "faulted", nil, func(f *Facts) {
			f.Unapplied = []string{"failover at 2s: CLUSTER FAILOVER on 127.0.0.1:7001: ERR You should send CLUSTER FAILOVER to a replica"}
		}, exitcode.Failed, "CLUSTER FAILOVER"},
		{"flaw without thresholds", "claimed", func(c *Claim) { c.Shows, c.Thresholds = design.ShowsFlaw, nil }, nil,
			exitcode.Usage, "names no threshold"},
		{"merge missing a segment", "tiled", nil, func(f *Facts) {
			f.Merge = &Merge{Runs: []Segment{{Name: "0/2", From: big.NewRat(0, 1), To: big.NewRat(1, 2)}}, Missing: "1/2:1"}
		}, exitcode.Failed, "none sent 1/2:1"},
		{"nothing scheduled", "sent", nil, func(f *Facts) { f.Metrics = map[string]float64{metric.Requests: 0} },
			exitcode.Failed, "no request was scheduled"},
		{"all dropped", "sent", nil, func(f *Facts) { f.Metrics[metric.Dropped] = 1000 },
			exitcode.Failed, "no request was sent: all 1000 were dropped"},
		{"most dropped", "executed", nil, func(f *Facts) {
			f.Metrics[metric.Dropped] = 600
			f.Drops = &Drops{Dropped: 600}
		}, exitcode.Failed, "600 of the plan's 1000 requests (60%) were dropped"},
		{"most dropped by a slow target", "executed", nil, func(f *Facts) {
			f.Metrics[metric.Dropped] = 600
			f.Drops = &Drops{Dropped: 600, SlowTarget: true}
		}, exitcode.Unreachable, "every worker was waiting on a slow answer"},
		{"most dropped waiting on the embedded Redis", "executed", nil, func(f *Facts) {
			f.Metrics[metric.Dropped] = 600
			f.Drops, f.Embedded = &Drops{Dropped: 600, SlowTarget: true}, true
		}, exitcode.Failed, "waiting on the embedded Redis, which answers inside rlctl: rlctl's own process was too slow (its own CPU or scheduling), not a target"},
		{"wall clock stepped", "steady-clock", nil, func(f *Facts) { f.Ran, f.WallMoved = 5*time.Second, 25*time.Millisecond },
			exitcode.Failed, "this machine's wall clock moved 25ms ahead against its steady clock over the run's 5s (5000 ppm"},
		{"wall clock stepped back", "steady-clock", func(c *Claim) { c.Kind = KindRedisScript }, func(f *Facts) { f.Ran, f.WallMoved = time.Minute, -90*time.Millisecond },
			exitcode.Failed, "moved 90ms back"},
		{"redis clock stepped", "steady-clock", nil, func(f *Facts) { f.Ran, f.RedisMoved = 5*time.Second, -40*time.Millisecond },
			exitcode.Failed, "the target's Redis clock (TIME) moved at least 40ms back against this machine's steady clock over the run's 5s (8000 ppm"},
		{"nothing answered", "answered", nil, func(f *Facts) {
			f.Metrics[metric.Allowed], f.Metrics[metric.Denied], f.Metrics[metric.Errors] = 0, 0, 1000
			f.FirstErrors = []string{"dial tcp: connection refused"}
		}, exitcode.Unreachable, "nothing answered: all 1000 requests sent failed, so nothing was measured; first errors: dial tcp"},
		{"redirects", "classified", func(c *Claim) { c.Kind = KindHTTP }, func(f *Facts) {
			f.Metrics[metric.Allowed], f.Metrics[metric.Errors] = 10, 290
			f.Statuses = map[int]int64{200: 10, 302: 290, 429: 700}
		}, exitcode.Failed, "290 answers (29% of those sent) were 302 Found (290): neither an admission"},
		{"redis outage", "decided", nil, func(f *Facts) {
			f.Outages = []Outage{{From: time.Second, To: 2 * time.Second, FailOpen: 200}}
		}, exitcode.Unreachable, "Redis did not decide: unreachable, failing or slower than the timeout at t=1.00s–2.00s (200 failed open)"},
		{"embedded Redis too slow", "decided", nil, func(f *Facts) {
			f.Embedded = true
			f.Outages = []Outage{{From: time.Second, To: 2 * time.Second, FailClosed: 200, Errors: 6}}
		}, exitcode.Failed, "the embedded Redis did not decide in time at t=1.00s–2.00s (200 failed closed, 6 errors), which answers inside rlctl: rlctl's own process was too slow (its own CPU or scheduling)"},
		{"embedded Redis under a user's script", "decided", func(c *Claim) { c.Kind = KindRedisScript }, func(f *Facts) {
			f.Embedded = true
			f.Outages = []Outage{{From: 0, To: time.Second, Errors: 300}}
		}, exitcode.Failed, "the embedded Redis did not decide at t=0.00s–1.00s (300 errors): the script failed, or it answered slower than the timeout"},
		{"http errors", "decided", func(c *Claim) { c.Kind = KindHTTP }, func(f *Facts) {
			f.Outages = []Outage{{From: 0, To: time.Second, Errors: 300}}
			f.Statuses = map[int]int64{503: 300, 200: 300, 429: 400}
		}, exitcode.Failed, "set denied_status: [503]"},
		{"nothing admitted", "admitted", nil, func(f *Facts) {
			f.Metrics[metric.Allowed], f.Metrics[metric.Denied], f.Metrics[metric.Ceiling], f.Metrics[metric.CeilingUpper] = 0, 1000, 0, 0
		}, exitcode.Failed, "nothing was admitted: all 1000 answers were denials"},
		{"boundary never straddled", "straddled", nil, func(f *Facts) {
			f.Boundaries = []Boundary{{At: time.Second, Aim: "headers", Uncertainty: time.Second, Span: 50 * time.Millisecond}}
		}, exitcode.Failed, "learned only to within 1s, more than the ±50ms span"},
		{"boundary of an unknown edge", "straddled", nil, func(f *Facts) {
			f.Boundaries = []Boundary{{At: time.Second, Aim: "epoch", Uncertainty: -1, Span: 50 * time.Millisecond}}
		}, exitcode.Failed, "no edge could be learned"},
		{"boundary decided after the edge", "straddled", nil, func(f *Facts) {
			f.Boundaries = []Boundary{{At: time.Second, Aim: "epoch", Span: 50 * time.Millisecond, Before: 10, Early: 4, AdmittedBefore: 10}}
		}, exitcode.Failed, "only 4 of the 10 requests aimed before it were decided before it (their answers came late), so the shots fell in one window"},
		// ulule's fixed window once read as holding so: the shot's first
		// half mostly denied (the window before the edge already spent),
		// then admissions after the denials (the window rolled somewhere).
		{"boundary before a spent window", "straddled", nil, func(f *Facts) {
			f.Boundaries = []Boundary{{At: time.Second, Aim: "first-request", Uncertainty: 3 * time.Millisecond, Span: 50 * time.Millisecond, Rolled: true, Before: 20, Early: 20, AdmittedBefore: 4}}
		}, exitcode.Failed, "only 4 of the 20 requests aimed before the edge were admitted, so the quota before it was already spent (a window used up"},
		{"boundary pattern with no shot", "straddled", nil, func(f *Facts) {
			f.BoundaryPattern, f.Planned, f.Ran = true, 2*time.Second, 10*time.Millisecond
		}, exitcode.Failed, "the boundary pattern fired no shot in 2s of traffic"},
		{"boundary with no early answer", "straddled", nil, func(f *Facts) {
			f.Boundaries = []Boundary{{At: time.Second, Aim: "epoch", Span: 50 * time.Millisecond}}
		}, exitcode.Failed, "none of the requests aimed before it was answered"},
		{"boundary decided after the edge on the embedded Redis", "straddled", nil, func(f *Facts) {
			f.Embedded = true
			f.Boundaries = []Boundary{{At: time.Second, Aim: "epoch", Span: 50 * time.Millisecond, Before: 10, Early: 4, AdmittedBefore: 10}}
		}, exitcode.Failed, "the late answers came from the embedded Redis, which answers inside rlctl: rlctl's own process was too slow (its own CPU or scheduling)"},
		{"a starved instrument", "kept-time", nil, func(f *Facts) {
			f.Metrics[metric.SendLagP99], f.Metrics[metric.HerdPeak] = 271, 42
		}, exitcode.Failed, "sent 1% of requests 271ms or more late"},
		{"latency threshold failed by rlctl's own lag", "kept-time", func(c *Claim) { c.Thresholds = ths(t, "ceiling <= limit", "p50 < 1ms") }, func(f *Facts) {
			f.Metrics[metric.P50], f.FromSent = 1.001, map[string]float64{metric.P50: 0.4}
		}, exitcode.Failed, "p50 < 1ms fails at 1.001ms counted from each request's scheduled time but holds at 0.4ms counted from when it really left: rlctl itself sent late (its own CPU or scheduling"},
		{"latency flaw shown by rlctl's own lag", "kept-time", func(c *Claim) { c.Shows, c.Thresholds = design.ShowsFlaw, ths(t, "p99 > 50ms") }, func(f *Facts) {
			f.Metrics[metric.P99], f.FromSent = 70, map[string]float64{metric.P99: 12}
		}, exitcode.Failed, "p99 > 50ms holds at 70ms counted from each request's scheduled time but fails at 12ms counted from when it really left"},
		{"race not raced", "concurrent", nil, func(f *Facts) { f.Race = &Race{Releases: 100, Concurrent: 9} },
			exitcode.Failed, "only 9 of 100 releases (one identity's request through every gateway at once) had two requests in flight"},
		// A fixed window whose shot straddled (the window rolled) but
		// whose answers came 40–160ms after shots spanning ±50ms: almost
		// none lies inside the span, so boundary_allowed reads 2 where up
		// to 2L, 40, may have been admitted there.
		{"boundary answered slower than its span", "settled", func(c *Claim) { c.Thresholds = ths(t, "boundary_allowed <= limit") }, func(f *Facts) {
			f.Boundaries = []Boundary{{At: time.Second, Aim: "answers", Uncertainty: 2 * time.Millisecond, Span: 50 * time.Millisecond, Rolled: true, Before: 10, AdmittedBefore: 10}}
			f.Metrics[metric.BoundaryAllowed], f.Metrics[metric.BoundaryAllowedUpper] = 2, 40
		}, exitcode.Failed, "boundary_allowed <= limit holds on boundary_allowed 2, what surely happened, and fails on boundary_allowed_upper 40, what may have: under half of the admissions it may count were surely inside it, the answers having come slower than the boundary shots' ±50ms span"},
		// The same shot with nothing denied (a fixed window admits its
		// 2L): the limit was reached, in what may have been admitted.
		{"boundary answered late, nothing denied", "settled", func(c *Claim) { c.Thresholds = ths(t, "boundary_allowed <= limit") }, func(f *Facts) {
			f.Boundaries = []Boundary{{At: time.Second, Aim: "epoch", Span: 50 * time.Millisecond, Rolled: true}}
			f.Metrics[metric.Requests], f.Metrics[metric.Allowed], f.Metrics[metric.Denied] = 80, 80, 0
			f.Metrics[metric.BoundaryAllowed], f.Metrics[metric.BoundaryAllowedUpper] = 0, 40
		}, exitcode.Failed, "boundary_allowed <= limit holds on boundary_allowed 0"},
		{"boundary burst hidden by late answers", "settled", func(c *Claim) { c.Shows, c.Thresholds = design.ShowsFlaw, ths(t, "boundary_allowed > limit") }, func(f *Facts) {
			f.Boundaries = []Boundary{{At: time.Second, Aim: "answers", Span: 50 * time.Millisecond, Rolled: true}}
			f.Metrics[metric.BoundaryAllowed], f.Metrics[metric.BoundaryAllowedUpper] = 12, 40
		}, exitcode.Failed, "boundary_allowed > limit fails on boundary_allowed 12, what surely happened, and holds on boundary_allowed_upper 40"},
		{"ceiling answered slower than its window", "settled", nil, func(f *Facts) { f.Metrics[metric.CeilingUpper] = 41 },
			exitcode.Failed, "ceiling <= limit holds on ceiling 20, what surely happened, and fails on ceiling_upper 41, what may have: under half of the admissions it may count were surely inside it, the answers having come slower than what the figure counts"},
		{"boundary answered late by the embedded Redis", "settled", func(c *Claim) { c.Thresholds = ths(t, "boundary_allowed <= limit") }, func(f *Facts) {
			f.Embedded = true
			f.Boundaries = []Boundary{{At: time.Second, Aim: "answers", Span: 50 * time.Millisecond, Rolled: true}}
			f.Metrics[metric.BoundaryAllowed], f.Metrics[metric.BoundaryAllowedUpper] = 3, 21
		}, exitcode.Failed, "the late answers came from the embedded Redis, which answers inside rlctl"},
		{"after-fault cap cut short", "covered", func(c *Claim) { c.Thresholds = ths(t, "after_fault_ceiling <= limit") }, func(f *Facts) {
			f.Faults, f.Ran = 1, 2*time.Second
			f.Applied = []Fault{{Action: "failover", At: 1200 * time.Millisecond, Stopped: 1200 * time.Millisecond, Answered: 1500 * time.Millisecond}}
			f.Metrics[metric.AfterFaultCeiling], f.Metrics[metric.AfterFaultCeilingUpper] = 20, 20
		}, exitcode.Failed, "after_fault_ceiling <= limit held, but the traffic stopped 500ms after the failover at 1.2s ended, short of the window (1s) after it in which what a fault lets through is spent: run the traffic until at least 2.5s"},
		{"election never ended", "covered", func(c *Claim) { c.Thresholds = ths(t, "other_shards_after_fault_ceiling <= limit") }, func(f *Facts) {
			f.Faults, f.Ran = 1, 5*time.Second
			f.Applied = []Fault{{Action: "failover", At: time.Second, Stopped: time.Second}}
			f.Metrics[metric.OtherShardsAfterFaultCeiling], f.Metrics[metric.OtherShardsAfterFaultCeilingUpper] = 20, 20
		}, exitcode.Failed, "the failover at 1s never ended in the run"},
		{"failover noticed late on the embedded Redis", "noticed", func(c *Claim) {
			c.Endpoints = []Endpoint{{Name: "api", OnError: design.OnErrorClosed, OnFailover: design.OnFailoverDeny}}
		}, func(f *Facts) {
			f.Embedded = true
			f.Metrics[metric.FailoverDenied], f.Metrics[metric.FailoverDetectMs] = 90, 120
		}, exitcode.Failed, "the gateways denied for the failover 120ms after it, later than the 75ms"},
		{"a threshold on a figure not produced", "measured", func(c *Claim) { c.Thresholds = ths(t, "after_fault_ceiling <= limit") }, nil,
			exitcode.Failed, "after_fault_ceiling <= limit: after_fault_ceiling was not measured in this scenario"},
	}
	// The rows whose run failed because rlctl itself was too busy to
	// measure (CheckResult.Busy); every other row's target was the cause.
	busy := map[string]bool{
		"most dropped": true, "most dropped waiting on the embedded Redis": true, "embedded Redis too slow": true,
		"boundary decided after the edge on the embedded Redis": true, "a starved instrument": true,
		"latency threshold failed by rlctl's own lag": true, "latency flaw shown by rlctl's own lag": true, "race not raced": true,
		"boundary answered late by the embedded Redis": true, "failover noticed late on the embedded Redis": true,
	}
	// The rows whose run failed because the answers came too late for
	// the figure (CheckResult.Late).
	late := map[string]bool{
		"boundary decided after the edge": true, "boundary decided after the edge on the embedded Redis": true,
		"boundary answered slower than its span": true, "boundary burst hidden by late answers": true,
		"ceiling answered slower than its window": true, "boundary answered late by the embedded Redis": true,
		"boundary answered late, nothing denied": true, "most dropped by a slow target": true,
		"most dropped waiting on the embedded Redis": true,
	}
	// The rows this machine failed, which may measure when run again
	// (CheckResult.Again): the busy ones, and a stepped clock.
	again := map[string]bool{"wall clock stepped": true, "wall clock stepped back": true, "redis clock stepped": true}
	for name := range busy {
		again[name] = true
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := claim(t, "ceiling <= limit"), measured()
			if tt.claim != nil {
				tt.claim(&c)
			}
			if tt.facts != nil {
				tt.facts(&f)
			}
			v := Judge(c, f)
			if v.Status != StatusError || v.Words != NotMeasured {
				t.Fatalf("status %s (%s), want error (not measured)", v.Status, v.Words)
			}
			if got := failedCheck(v); got != tt.check {
				t.Errorf("failed check %q, want %q", got, tt.check)
			}
			for _, ch := range v.Checks {
				if !ch.Held && ch.Busy != busy[tt.name] {
					t.Errorf("check %s: busy %v, want %v", ch.Name, ch.Busy, busy[tt.name])
				}
				if !ch.Held && ch.Again != again[tt.name] {
					t.Errorf("check %s: again %v, want %v", ch.Name, ch.Again, again[tt.name])
				}
				if !ch.Held && ch.Late != late[tt.name] {
					t.Errorf("check %s: late %v, want %v", ch.Name, ch.Late, late[tt.name])
				}
			}
			if v.Code != tt.code {
				t.Errorf("exit code %d, want %d", v.Code, tt.code)
			}
			if !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("reason %q does not say %q", v.Reason, tt.reason)
			}
		})
	}
	t.Run("a measured run passes every check", func(t *testing.T) {
		f := measured()
		// Half the shot aimed before the edge was decided before it.
		f.Boundaries = []Boundary{{At: time.Second, Aim: "headers", Uncertainty: time.Millisecond, Span: 50 * time.Millisecond, Before: 10, Early: 5, AdmittedBefore: 10}}
		f.Race = &Race{Releases: 100, Concurrent: 15}
		f.Statuses = map[int]int64{200: 300, 429: 700}
		// rlctl's lag moved p99 (from 3ms to 4ms), not the outcome.
		f.Metrics[metric.P99], f.FromSent = 4, map[string]float64{metric.P99: 3}
		v := Judge(claim(t, "ceiling <= limit", "p99 < 5ms"), f)
		if v.Status != StatusPass || v.Words != Holds || v.Code != exitcode.OK {
			t.Fatalf("got %s (%s), exit %d, reason %q", v.Status, v.Words, v.Code, v.Reason)
		}
		if !strings.Contains(strings.Join(v.Notes, "\n"), "15 of 100 race releases had two requests in flight at once") {
			t.Errorf("no note says how many releases raced: %q", v.Notes)
		}
		for _, c := range v.Checks {
			if !c.Held || c.Busy {
				t.Errorf("check %s failed (busy %v): %s", c.Name, c.Busy, c.Reason)
			}
		}
	})
}

// Each check that applies to every run is listed in every verdict, so a
// report shows what was checked; the table's checks all have a name,
// words for rlctl help verdicts and a test function.
func TestChecksAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Checks {
		if c.Name == "" || c.Needs == "" || c.test == nil || seen[c.Name] {
			t.Errorf("check %+v lacks a part or repeats a name", c.Name)
		}
		if !c.NoteOnly && c.Code == exitcode.OK {
			t.Errorf("check %s fails a run with exit 0", c.Name)
		}
		seen[c.Name] = true
	}
	v := Judge(claim(t, "ceiling <= limit"), measured())
	var names []string
	for _, c := range v.Checks {
		names = append(names, c.Name)
	}
	if got, want := strings.Join(names, " "), "complete claimed sent answered decided executed admitted pressed measured settled"; got != want {
		t.Errorf("checks applied to a plain run: %s, want %s", got, want)
	}
}

// A cap that held in a run the limiter denied nothing in held on the
// traffic alone: fifty gateways with local counters offered less than
// their limit pass ceiling <= limit whatever they do. Such a run is not
// measured (exit 1), and the pressed check is named as not held; a
// failure policy's denials are not the limiter's.
func TestUnpressedCapIsNotMeasured(t *testing.T) {
	tests := []struct {
		name  string
		claim []string
		facts func(*Facts)
		why   string
	}{
		{"limit never reached", nil, func(f *Facts) {
			f.Metrics[metric.Requests], f.Metrics[metric.Allowed], f.Metrics[metric.Denied] = 40, 40, 0
			f.Metrics[metric.Ceiling], f.Metrics[metric.CeilingUpper] = 12, 12
		}, "the limiter denied none of the 40 requests answered, so none of its counters reached its limit (20/s): ceiling <= limit held on the traffic alone, as it would with no limiter at all"},
		{"only the failure policy denied", []string{"limit >= ceiling", "slipped == 0"}, func(f *Facts) {
			f.Metrics[metric.Denied], f.Metrics[metric.FailClosed], f.Metrics[metric.Slipped] = 300, 300, 0
		}, ": limit >= ceiling and slipped == 0 held on the traffic alone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := claim(t, tt.claim...), measured()
			tt.facts(&f)
			v := Judge(c, f)
			if v.Status != StatusError || v.Code != exitcode.Failed || !strings.Contains(v.Reason, tt.why) {
				t.Fatalf("status %s, exit %d (%s): want not measured, exit 1, because %q", v.Status, v.Code, v.Reason, tt.why)
			}
			if failedCheck(v) != "pressed" {
				t.Errorf("checks %+v: want pressed not held", v.Checks)
			}
		})
	}
	f := measured() // 700 denied by the limiter
	if v := Judge(claim(t), f); failedCheck(v) != "" || v.Status != StatusPass {
		t.Errorf("a pressed run: %s, checks %+v", v.Status, v.Checks)
	}
}

// A run the limiter denied nothing in is still measured where the claim
// is not a cap it held: a cap that failed (more admitted than allowed, no
// limiter at all), a flaw shown above the limit, a latency bound.
func TestUnpressedRunsThatMeasure(t *testing.T) {
	f := measured()
	f.Metrics[metric.Denied] = 0
	f.Metrics[metric.Ceiling], f.Metrics[metric.CeilingUpper] = 96, 96
	f.Metrics[metric.P99] = 3
	if v := Judge(claim(t, "ceiling <= limit"), f); v.Status != StatusFail || v.Words != DoesNotHold {
		t.Errorf("cap broken without a denial: %s (%s): %s", v.Status, v.Words, v.Reason)
	}
	flaw := claim(t, "ceiling > limit", "slipped >= 0")
	flaw.Shows = design.ShowsFlaw
	f.Metrics[metric.Slipped] = 0
	if v := Judge(flaw, f); v.Status != StatusPass || v.Words != FlawShown {
		t.Errorf("flaw above the limit: %s (%s): %s", v.Status, v.Words, v.Reason)
	}
	if v := Judge(claim(t, "p99 < 5ms"), f); v.Status != StatusPass {
		t.Errorf("latency bound: %s (%s): %s", v.Status, v.Words, v.Reason)
	}
	for _, expr := range []string{"ceiling >= 10", "p99 < 5ms", "ceiling != 3", "-1*ceiling <= 0"} {
		if capOf(ths(t, expr)[0], capped) {
			t.Errorf("%s read as a cap on what the limiter admitted", expr)
		}
	}
	for _, expr := range []string{"ceiling <= limit", "limit >= ceiling", "burst < 25", "race_excess == 0", "2*boundary_allowed <= 3*limit", "after_fault_ceiling_upper < limit"} {
		if !capOf(ths(t, expr)[0], capped) {
			t.Errorf("%s not read as a cap on what the limiter admitted", expr)
		}
	}
}

// A window shot shows it straddled when its answers show the window
// rolling, even though its aim was not known.
func TestRolledBoundaryStraddles(t *testing.T) {
	f := measured()
	f.Boundaries = []Boundary{{Aim: "epoch", Uncertainty: -1, Span: 50 * time.Millisecond, Rolled: true}}
	if v := Judge(claim(t, "ceiling <= limit"), f); v.Status != StatusPass {
		t.Errorf("status %s: %s", v.Status, v.Reason)
	}
}

// A scenario with no thresholds claims its published cap: a run that
// admitted 4.8 times its limit does not hold, and the report says the
// claim was the default.
func TestNoThresholdsClaimsThePublishedCap(t *testing.T) {
	f := measured()
	f.Metrics[metric.Ceiling], f.Metrics[metric.CeilingUpper] = 96, 96
	v := Judge(claim(t), f)
	if v.Status != StatusFail || v.Words != DoesNotHold || v.Code != exitcode.Failed {
		t.Fatalf("got %s (%s), exit %d", v.Status, v.Words, v.Code)
	}
	if len(v.Thresholds) != 1 || v.Thresholds[0].Expr != DefaultThreshold || !v.Thresholds[0].Default {
		t.Fatalf("thresholds %+v, want the default claim", v.Thresholds)
	}
	if !strings.Contains(strings.Join(v.Notes, "\n"), "its claim is the published cap") {
		t.Errorf("no note says the claim is the default: %q", v.Notes)
	}
	f.Metrics[metric.Ceiling], f.Metrics[metric.CeilingUpper] = 20, 20
	if v := Judge(claim(t), f); v.Status != StatusPass || v.Words != Holds {
		t.Errorf("within the cap: %s (%s)", v.Status, v.Words)
	}
}

// Verdict words follow what the scenario shows: a flaw scenario's pass
// is a flaw demonstrated, never a design that holds.
func TestVerdictWords(t *testing.T) {
	f := measured()
	f.Metrics[metric.Ceiling] = 40
	c := claim(t, "ceiling > limit")
	c.Shows = design.ShowsFlaw
	if v := Judge(c, f); v.Words != FlawShown || v.Status != StatusPass {
		t.Errorf("flaw shown: %s (%s)", v.Words, v.Status)
	}
	f.Metrics[metric.Ceiling] = 20
	if v := Judge(c, f); v.Words != FlawNotShown || v.Code != exitcode.Failed {
		t.Errorf("flaw not shown: %s (exit %d)", v.Words, v.Code)
	}
	if v := NotMeasuredBy(c, exitcode.With(errors.New("redis down"), exitcode.Unreachable)); v.Words != NotMeasured || v.Code != exitcode.Unreachable {
		t.Errorf("setup failure: %s (exit %d)", v.Words, v.Code)
	}
	if v := Skip("needs a cluster"); v.Words != NotRun || v.Code != exitcode.OK {
		t.Errorf("skipped: %s (exit %d)", v.Words, v.Code)
	}
}

// A threshold on a metric the run did not measure never passes, and
// never says the design does not hold either: the claim was not measured
// (exit 1), naming the threshold, beside one that was.
func TestUnmeasuredThresholdIsNotMeasured(t *testing.T) {
	for _, shows := range []string{design.ShowsHolds, design.ShowsFlaw} {
		c := claim(t, "ceiling <= limit", "race_excess == 0")
		c.Shows = shows
		v := Judge(c, measured())
		if v.Status != StatusError || v.Words != NotMeasured || v.Code != exitcode.Failed ||
			v.Reason != "race_excess == 0: race_excess was not measured in this scenario" {
			t.Errorf("shows %q: %s (%s), exit %d, reason %q", shows, v.Status, v.Words, v.Code, v.Reason)
		}
		if len(v.Thresholds) != 2 || v.Thresholds[0].Status != StatusPass || v.Thresholds[1].Error == "" {
			t.Errorf("shows %q: thresholds %+v, want the measured one judged and the other's error", shows, v.Thresholds)
		}
	}
}

// A run passes only when something ran and everything that ran passed.
func TestSuite(t *testing.T) {
	pass := Verdict{Status: StatusPass, Words: Holds}
	flaw := Verdict{Status: StatusPass, Words: FlawShown}
	fail := Verdict{Status: StatusFail, Words: DoesNotHold, Code: exitcode.Failed}
	down := Verdict{Status: StatusError, Words: NotMeasured, Code: exitcode.Unreachable}
	skip := Skip("x")
	tests := []struct {
		name   string
		vs     []Verdict
		intr   bool
		status string
		code   exitcode.Code
	}{
		{"all pass", []Verdict{pass, flaw, skip}, false, StatusPass, exitcode.OK},
		{"one fails", []Verdict{pass, fail}, false, StatusFail, exitcode.Failed},
		{"worst code wins", []Verdict{fail, down, pass}, false, StatusFail, exitcode.Unreachable},
		{"no scenario", nil, false, StatusFail, exitcode.Usage},
		{"all skipped", []Verdict{skip, skip}, false, StatusFail, exitcode.Usage},
		{"interrupted", []Verdict{pass}, true, StatusIncomplete, exitcode.Interrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Suite(tt.vs, tt.intr)
			if s.Status != tt.status || s.Code != tt.code {
				t.Errorf("got %s exit %d, want %s exit %d", s.Status, s.Code, tt.status, tt.code)
			}
		})
	}
	if got := strings.Join(Suite([]Verdict{pass, pass, flaw, skip}, false).Counts, ", "); got != "2 designs hold, 1 flaw demonstrated, 1 not run" {
		t.Errorf("counts %q", got)
	}
}

func seg(name string, a, b, n int64) Segment {
	return Segment{Name: name, From: big.NewRat(a, n), To: big.NewRat(b, n)}
}

// The segments of a merge tile the plan exactly once: a gap and a
// repeated share are each named.
func TestTile(t *testing.T) {
	whole := Segment{}
	tests := []struct {
		name           string
		segs           []Segment
		missing, twice string
	}{
		{"two halves", []Segment{seg("1/2", 1, 2, 2), seg("0/2", 0, 1, 2)}, "", ""},
		{"one half", []Segment{seg("0/2", 0, 1, 2)}, "1/2:1", ""},
		{"the same half twice", []Segment{seg("0/2", 0, 1, 2), seg("0/2", 0, 1, 2)}, "1/2:1", "segment 0/2 and segment 0/2"},
		{"a run twice", []Segment{whole, whole}, "", "the whole plan and the whole plan"},
		{"a gap in the middle", []Segment{seg("0/3", 0, 1, 3), seg("2/3", 2, 3, 3)}, "1/3:2/3", ""},
		{"overlapping", []Segment{seg("0:1/2", 0, 1, 2), seg("1/4:1", 1, 4, 4)}, "", "segment 0:1/2 and segment 1/4:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ti := Tile(tt.segs)
			if got := ti.String(); got != tt.missing {
				t.Errorf("missing %q, want %q", got, tt.missing)
			}
			if got := strings.Join(ti.Twice, "; "); got != tt.twice {
				t.Errorf("twice %q, want %q", got, tt.twice)
			}
		})
	}
}

// A run that admitted past the limit while its endpoint failed open says
// the excess is that policy's choice.
func TestFailOpenByChoiceIsSaid(t *testing.T) {
	c := claim(t, "fail_open > 0")
	c.Endpoints = []Endpoint{{Name: "login", OnError: design.OnErrorClosed}, {Name: "feed", OnError: design.OnErrorOpen}}
	f := measured()
	f.Metrics[metric.Ceiling], f.Metrics[metric.FailOpen] = 48, 50
	v := Judge(c, f)
	if v.Status != StatusPass {
		t.Fatalf("status %s: %s", v.Status, v.Reason)
	}
	if notes := strings.Join(v.Notes, "\n"); !strings.Contains(notes, "the 28 over the limit are at most the 50 requests admitted fail-open: endpoint feed chose to admit without a limit") {
		t.Errorf("notes do not say the excess is the feed's policy:\n%s", notes)
	}
}

// Each threshold says what it observed and the bound it held that to,
// in the metric's unit; one on a metric not measured fails.
func TestThresholdsFromScenario(t *testing.T) {
	t.Parallel()
	var ths []threshold.Threshold
	for _, e := range []string{"ceiling <= limit", "p99 < 5ms", "race_excess == 0"} {
		th, err := threshold.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		ths = append(ths, th)
	}
	m := map[string]float64{metric.Ceiling: 25, metric.P99: 2}
	got := Thresholds(ths, m, rate.Limit{Count: 20, Window: time.Second})
	if len(got) != 3 {
		t.Fatalf("got %d", len(got))
	}
	if got[0].Status != StatusFail || got[0].Observed == nil || *got[0].Observed != 25 || got[0].Bound == nil || *got[0].Bound != 20 ||
		got[0].Unit != "" || got[0].BoundWritten {
		t.Errorf("ceiling: %+v", got[0])
	}
	if got[1].Status != StatusPass || *got[1].Observed != 2 || got[1].Bound == nil || *got[1].Bound != 5 || got[1].Unit != "ms" || !got[1].BoundWritten {
		t.Errorf("p99: %+v", got[1])
	}
	if got[2].Status != StatusFail || got[2].Observed != nil || got[2].Error != "race_excess was not measured in this scenario" {
		t.Errorf("unmeasured: %+v", got[2])
	}
}

// Deny-after-failover gateways run by rlctl noticed an emulated failover
// in time (on a Redis outside rlctl, allowing six of its round trips), or
// the failover was a real election, or the gateways are the user's, or
// they trust the new primary: the noticed check holds or does not apply
// (its failure is a row of TestValidityTable).
func TestFailoverNoticeAllowsTheRedisRoundTrip(t *testing.T) {
	c := claim(t, "after_fault_ceiling < 1.5*limit")
	c.Endpoints = []Endpoint{{Name: "api", OnError: design.OnErrorClosed, OnFailover: design.OnFailoverDeny}}
	// p50 is the round trip counted from when requests really left; the
	// schedule's figure (from when they were due) is 200ms, rlctl's lag.
	run := func(embedded bool, detectMs, p50 float64) Verdict {
		f := measured()
		f.Embedded, f.Faults = embedded, 1
		f.Metrics[metric.AfterFaultCeiling], f.Metrics[metric.AfterFaultCeilingUpper] = 25, 25
		f.Metrics[metric.FailoverDenied], f.Metrics[metric.FailoverDetectMs] = 90, detectMs
		f.Metrics[metric.P50], f.FromSent = 200, map[string]float64{metric.P50: p50}
		return Judge(c, f)
	}
	if v := run(true, 120, 0.1); failedCheck(v) != "noticed" {
		t.Fatalf("noticed in 120ms on the embedded Redis: %s, check %q", v.Status, failedCheck(v))
	}
	if v := run(true, 58, 0.1); v.Status != StatusPass {
		t.Errorf("noticed in 58ms: %s (%s)", v.Status, v.Reason)
	}
	if v := run(false, 120, 1); failedCheck(v) != "noticed" || !strings.Contains(v.Reason, "81ms") {
		t.Errorf("noticed in 120ms on a Redis outside rlctl answering in 1ms: %s, check %q (%s)", v.Status, failedCheck(v), v.Reason)
	}
	// At 30ms a reconnection, a marker read and a refused request take
	// about five round trips: 200ms is on time there.
	if v := run(false, 200, 30); v.Status != StatusPass {
		t.Errorf("noticed in 200ms on a Redis outside rlctl answering in 30ms: %s (%s)", v.Status, v.Reason)
	}
	// A real election took 1.2s: the gateways noticed 40ms after it.
	f := measured()
	f.Faults, f.Ran = 1, 4*time.Second
	f.Applied = []Fault{{Action: "failover", At: 1500 * time.Millisecond, Stopped: 1510 * time.Millisecond, Answered: 2700 * time.Millisecond}}
	f.Metrics[metric.AfterFaultCeiling], f.Metrics[metric.AfterFaultCeilingUpper] = 25, 25
	f.Metrics[metric.FailoverDenied], f.Metrics[metric.FailoverDetectMs] = 90, 1240
	f.FromSent = map[string]float64{metric.P50: 1}
	if v := Judge(c, f); v.Status != StatusPass {
		t.Errorf("noticed 40ms after a real election of 1.2s: %s (%s)", v.Status, v.Reason)
	}
	c.Kind = KindHTTP
	if v := run(false, 120, 1); v.Status != StatusPass {
		t.Errorf("the user's HTTP gateways noticed in 120ms: %s (%s)", v.Status, v.Reason)
	}
	c.Kind = KindSimulated
	c.Endpoints[0].OnFailover = design.OnFailoverTrust
	if v := run(true, 120, 0.1); v.Status != StatusPass {
		t.Errorf("gateways that trust the new primary: %s (%s)", v.Status, v.Reason)
	}
}

// A cap on what a fault let through stands once the traffic ran a window
// past the fault's end, and a flaw shown in a shorter run is shown: what
// was seen already exceeds the limit.
func TestAfterFaultFiguresSeenToTheEnd(t *testing.T) {
	f := measured()
	f.Faults, f.Ran = 1, 2600*time.Millisecond
	f.Applied = []Fault{{Action: "failover", At: 1200 * time.Millisecond, Stopped: 1200 * time.Millisecond, Answered: 1500 * time.Millisecond}}
	f.Metrics[metric.AfterFaultCeiling], f.Metrics[metric.AfterFaultCeilingUpper] = 20, 20
	if v := Judge(claim(t, "after_fault_ceiling <= limit"), f); v.Status != StatusPass {
		t.Errorf("a window past the election: %s (%s)", v.Status, v.Reason)
	}
	f.Ran = 1600 * time.Millisecond
	f.Metrics[metric.AfterFaultCeiling], f.Metrics[metric.AfterFaultCeilingUpper] = 35, 35
	flaw := claim(t, "after_fault_ceiling > limit")
	flaw.Shows = design.ShowsFlaw
	if v := Judge(flaw, f); v.Status != StatusPass || v.Words != FlawShown {
		t.Errorf("a flaw shown before the run was cut: %s (%s)", v.Status, v.Reason)
	}
}

// A graceful Sentinel failover lasts until its old primary, still taking
// some gateways' writes, is demoted: what the gateways meet until a window
// after that (a deny policy refuses for one from when it notices) is the
// failover's (PlannedSpans), and a cap on what it let through needs a
// window after the demotion (covered).
func TestFailoverLastsUntilTheOldPrimaryIsDemoted(t *testing.T) {
	f := Fault{Action: design.FaultFailover, At: 1500 * time.Millisecond, Answered: 2700 * time.Millisecond, Demoted: 3200 * time.Millisecond}
	if got := PlannedSpans([]Fault{f}, time.Second); len(got) != 1 || got[0].From != f.At || got[0].To != f.Demoted+time.Second+FaultGrace {
		t.Errorf("planned spans %+v, want [%v, %v]", got, f.At, f.Demoted+time.Second+FaultGrace)
	}
	// On spawn-sentinel the gateways noticed a failover 1.17s after it
	// began, once they reached the new primary (1.13s), and denied for a
	// window from then: to 3.68s, inside the span.
	s := Fault{Action: design.FaultFailover, At: 1500 * time.Millisecond, Answered: 2630 * time.Millisecond}
	if got := PlannedSpans([]Fault{s}, time.Second); got[0].To < 3680*time.Millisecond {
		t.Errorf("planned span %+v ends before the deny policy's window after the election", got)
	}
	facts := measured()
	facts.Faults, facts.Applied, facts.Ran = 1, []Fault{f}, 3900*time.Millisecond
	facts.Metrics[metric.AfterFaultCeiling], facts.Metrics[metric.AfterFaultCeilingUpper] = 20, 20
	v := Judge(claim(t, "after_fault_ceiling <= limit"), facts)
	if failedCheck(v) != "covered" || !strings.Contains(v.Reason, "run the traffic until at least 4.2s") {
		t.Errorf("traffic stopped 700ms after the demotion: %s, check %q: %s", v.Status, failedCheck(v), v.Reason)
	}
}

// TestSteadyClockAllowsSlewing: a wall clock slewed as NTP slews it (500
// ppm at most), or moved by 2ms or less, keeps the run's verdict; an http
// target's gateways keep their own clock, so this machine's is not
// checked for it.
func TestSteadyClockAllowsSlewing(t *testing.T) {
	for _, tt := range []struct {
		name             string
		kind             string
		ran, move, redis time.Duration
		applies          bool
	}{
		{"slewed over a minute", KindSimulated, time.Minute, -30 * time.Millisecond, 0, true},
		{"2ms in a second", KindSimulated, time.Second, 2 * time.Millisecond, 0, true},
		{"Redis slewed over a minute", KindRedisScript, time.Minute, 0, 40 * time.Millisecond, true},
		{"an http target", KindHTTP, 5 * time.Second, time.Second, time.Second, false},
		{"a steady clock", KindSimulated, 5 * time.Second, 0, 0, true},
		{"nothing ran", KindSimulated, 0, 0, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, f := claim(t, "ceiling <= limit"), measured()
			c.Kind, f.Ran, f.WallMoved, f.RedisMoved = tt.kind, tt.ran, tt.move, tt.redis
			v := Judge(c, f)
			if v.Status != StatusPass {
				t.Fatalf("status %s: %s", v.Status, v.Reason)
			}
			applied := false
			for _, ch := range v.Checks {
				applied = applied || ch.Name == "steady-clock"
				if ch.Again || ch.Busy {
					t.Errorf("a run that passed has check %s marked again %v, busy %v", ch.Name, ch.Again, ch.Busy)
				}
			}
			if applied != tt.applies {
				t.Errorf("steady-clock applied: %v, want %v", applied, tt.applies)
			}
		})
	}
}
