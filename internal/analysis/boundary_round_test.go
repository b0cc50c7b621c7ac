package analysis

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// The boundary pattern marks its batches with Record.Round too; they are
// not race rounds, so race_excess must not appear (a full quota admitted on
// each side of a boundary is not a race).
func TestBoundaryBatchesAreNotRaceRounds(t *testing.T) {
	t.Parallel()
	l := rate.Limit{Count: 5, Window: time.Second}
	meta := history.Meta{Limit: l, Identities: []string{"a"}, Gateways: []string{"g"}, Endpoints: []string{"e"},
		Boundaries: []time.Duration{time.Second}, BoundarySpan: 50 * time.Millisecond}
	h := history.New(meta, 20)
	for i := 0; i < 10; i++ {
		at := 960*time.Millisecond + time.Duration(i)*8*time.Millisecond
		h.Append(history.Record{Intended: at, Sent: at, Received: at + time.Millisecond, Decided: history.NoTime,
			RetryAfter: history.NoTime, Round: 0, Outcome: decision.Allowed, By: decision.ByRedis})
	}
	m := analyzed(t, h, Options{}).Metrics
	if _, ok := m[metric.RaceExcess]; ok {
		t.Errorf("race_excess %g reported for boundary batches", m[metric.RaceExcess])
	}
	if m[metric.BoundaryAllowed] != 10 {
		t.Errorf("boundary_allowed %g, want 10", m[metric.BoundaryAllowed])
	}
	// The same records as a race (Meta.Rounds set) do count.
	h.Meta.Boundaries, h.Meta.Rounds = nil, 1
	if got := analyzed(t, h, Options{}).Metrics[metric.RaceExcess]; got != 9 {
		t.Errorf("as a race round: race_excess %g, want 9", got)
	}
}
