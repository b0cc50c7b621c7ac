package score

import (
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
