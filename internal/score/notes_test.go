package score

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// notesOf are the findings of a run with the figures m on a claim of
// algorithm at 20/1s.
func notesOf(algorithm string, envelope float64, m map[string]float64) []string {
	c := Claim{Algorithm: algorithm, Limit: rate.Limit{Count: 20, Window: time.Second}, EnvelopeBurst: envelope, MaxErrorRate: 0.01}
	return findings(c, Facts{Metrics: m}, Verdict{}, nil)
}

func TestSendLagNote(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		lag, p99 float64
		want     bool
	}{
		{lag: 3, p99: 8, want: true},      // most of the latency is rlctl's
		{lag: 3, p99: 100, want: false},   // the target is slow on its own
		{lag: 0.4, p99: 0.9, want: false}, // under a millisecond: noise
	} {
		got := strings.Contains(strings.Join(notesOf(design.RedisFixedWindow, 0, map[string]float64{metric.SendLagP99: tt.lag, metric.P99: tt.p99}), "\n"), "rlctl itself sent")
		if got != tt.want {
			t.Errorf("send lag %vms, p99 %vms: note %v, want %v", tt.lag, tt.p99, got, tt.want)
		}
	}
}

// A bucket's note agrees with its figures: within the envelope it is the
// design, not a leak; with requests slipped beyond it, it is a leak (as
// when gateway clocks disagree and the refill counts time nobody waited).
func TestBucketNoteAgreesWithTheFigures(t *testing.T) {
	t.Parallel()
	c := Claim{Algorithm: design.RedisTokenBucket, Limit: rate.Limit{Count: 20, Window: time.Second}, EnvelopeBurst: 20}
	within := bucketNote(c, map[string]float64{metric.Ceiling: 39, metric.Slipped: 0})
	if !strings.Contains(within, "not a leak") {
		t.Errorf("within the envelope: %q", within)
	}
	beyond := bucketNote(c, map[string]float64{metric.Ceiling: 101, metric.Slipped: 57, metric.Burst: 60, metric.SustainedRate: 95})
	if strings.Contains(beyond, "not a leak") || !strings.Contains(beyond, "57 requests slipped") || !strings.Contains(beyond, "a leak, not the envelope") {
		t.Errorf("beyond the envelope: %q", beyond)
	}
}

// Notes print figures as the report's tables do (15.05×, 2×, burst 1.403),
// and one request as "1 request".
func TestNotesFormatFiguresLikeTheTables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m    map[string]float64
		want []string
	}{
		{map[string]float64{metric.Ceiling: 301}, []string{"admitted up to 301 for one identity within 1s: 15.05× the published 20"}},
		{map[string]float64{metric.Ceiling: 40}, []string{"2× the published 20"}},
		{map[string]float64{metric.Ceiling: 48}, []string{"2.4× the published 20"}},
		{map[string]float64{metric.Slipped: 1, metric.Burst: 1.4034, metric.SustainedRate: 100.25}, []string{"1 request slipped beyond", "measured burst 1.403, sustained 100.25/s"}},
		{map[string]float64{metric.RaceExcess: 1, metric.FailOpen: 1, metric.FailClosed: 2}, []string{"1 request passed the check", "1 request admitted with no limit", "2 requests refused"}},
		{map[string]float64{metric.SendLagP99: 3.4261, metric.P99: 5.807}, []string{"1% of requests 3.426ms or more", "p99 5.807ms includes"}},
	} {
		got := strings.Join(notesOf(design.RedisTokenBucket, 20, tc.m), "\n")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("notes for %v lack %q:\n%s", tc.m, w, got)
			}
		}
	}
	if got := dropNote(Drops{Dropped: 1, Workers: 1, SlowTarget: true, Service: 2500 * time.Microsecond, Rate: 100}, false); !strings.HasPrefix(got, "1 request was dropped: the one worker was waiting on answers (2.5ms") {
		t.Errorf("drop note %q", got)
	}
	if got := dropNote(Drops{Dropped: 3, Workers: 8, SlowTarget: true, Service: time.Second, Rate: 100}, true); !strings.HasPrefix(got, "3 requests were dropped: every worker was waiting on the embedded Redis (1000ms") || !strings.Contains(got, "not a target") {
		t.Errorf("drop note on the embedded Redis %q", got)
	}
}

// The target's clock shift is said when it is a millisecond or more.
func TestStampsShiftNote(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		shift time.Duration
		want  string
	}{
		{0, ""}, {200 * time.Microsecond, ""},
		{5 * time.Millisecond, "run 5ms ahead of rlctl's clock"},
		{-3 * time.Millisecond, "run 3ms behind rlctl's clock"},
	} {
		got := stampsShiftNote(Facts{Stamps: Stamps{Total: 10, Shift: tt.shift}})
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("shift %v: note %q, want %q", tt.shift, got, tt.want)
		}
	}
}

// A passed threshold that would fail with its figure's upper bound in its
// place says so: the claim rests on the lower bound alone. One that holds
// on both, or that the upper bound cannot break (a flaw's ">"), says
// nothing of it.
func TestTimingBoundNotes(t *testing.T) {
	tests := []struct {
		name   string
		expr   string
		shows  string
		upper  float64
		noted  bool
		status string
	}{
		{"upper over the cap", "ceiling <= limit", design.ShowsHolds, 21, true, StatusPass},
		{"upper within the cap", "ceiling <= limit", design.ShowsHolds, 20, false, StatusPass},
		{"cap on the right", "limit >= ceiling", design.ShowsHolds, 23, true, StatusPass},
		{"strict", "ceiling < 21", design.ShowsHolds, 21, true, StatusPass},
		{"flaw claim", "ceiling >= limit", design.ShowsFlaw, 30, false, StatusPass},
		{"failed claim", "ceiling < limit", design.ShowsHolds, 25, false, StatusFail},
		{"boundary", "boundary_allowed <= 1.1*limit", design.ShowsHolds, 30, true, StatusPass},
		{"after a fault", "after_fault_ceiling <= limit", design.ShowsHolds, 24, true, StatusPass},
		{"not measured", "ceiling <= limit", design.ShowsHolds, 21, false, StatusError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := claim(t, tt.expr)
			c.Shows = tt.shows
			f := measured()
			lower := metric.Ceiling
			if first := strings.Fields(tt.expr)[0]; metric.UpperOf[first] != "" {
				lower = first
				f.Metrics[lower] = 20
			}
			f.Metrics[metric.UpperOf[lower]] = tt.upper
			if tt.status == StatusError {
				f.Metrics[metric.Requests] = 0 // nothing scheduled: not measured
			}
			v := Judge(c, f)
			if v.Status != tt.status {
				t.Fatalf("status %s (%s), want %s", v.Status, v.Reason, tt.status)
			}
			var noted []string
			for _, n := range v.Notes {
				if strings.Contains(n, "leaves the claim unsettled") {
					noted = append(noted, n)
				}
			}
			if got := len(noted) > 0; got != tt.noted {
				t.Fatalf("noted %v, want %v: %q", got, tt.noted, v.Notes)
			}
			if tt.noted && (len(noted) != 1 || !strings.Contains(noted[0], tt.expr+" holds on "+lower+" 20") ||
				!strings.Contains(noted[0], metric.UpperOf[lower]+" is "+strconv.FormatFloat(tt.upper, 'f', -1, 64))) {
				t.Fatalf("note %q, want one naming %s, %s 20 and its upper bound %g", noted, tt.expr, lower, tt.upper)
			}
		})
	}
}
