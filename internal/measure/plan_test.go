package measure

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/ceiling"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/rate"
)

func params(count int64, w time.Duration, gateways int) ceiling.Params {
	return ceiling.Params{Limit: rate.Limit{Count: count, Window: w}, Gateways: gateways}
}

// By default a measurement covers a whole window, and its load overloads
// the design: four times the theory's ceiling per window.
func TestPlanCoversAWindow(t *testing.T) {
	t.Parallel()
	pl, err := NewPlan(design.RedisFixedWindow, params(5, 2*time.Second, 3), 0, DefaultBounds)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Duration < 2*time.Second || !pl.Boundary {
		t.Errorf("duration %s, boundary %v; want at least the 2s window, with the boundary run", pl.Duration, pl.Boundary)
	}
	if pl.Rate != 4*10/2.0 {
		t.Errorf("offered %g/s; want 4 × the ceiling of 10 per 2s", pl.Rate)
	}
	if sc, err := pl.scenario("boundary"); err != nil || sc.Traffic.Duration != pl.Duration || sc.Limit != pl.Params.Limit {
		t.Errorf("scenario %+v, %v; want the plan's limit and duration", sc, err)
	}
}

// What this machine cannot measure is refused before anything runs, with
// the reason and what would fit.
func TestPlanRefusesWhatCannotBeMeasured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		p      ceiling.Params
		design string
		d      time.Duration
		want   []string
	}{
		{"a million per second through 5000 gateways", params(1_000_000, time.Second, 5000), design.RedisFixedWindow, 0,
			[]string{"decisions/s", "500/s has the same shape", "5000 gateways", "GiB of memory"}},
		{"local counters multiply the rate", params(100, time.Second, 50), design.LocalFixedWindow, 0,
			[]string{"10000 per 1s", "20000 decisions/s"}},
		{"a window too long to wait for", params(100, time.Hour, 1), design.RedisFixedWindow, 0,
			[]string{"whole 1h0m0s window", "at most 10m0s"}},
		{"a run too long", params(10, time.Second, 1), design.RedisFixedWindow, 11 * time.Minute,
			[]string{"11m0s", "at most 10m0s"}},
		{"too many decisions", params(500, time.Second, 1), design.RedisFixedWindow, 10 * time.Minute,
			[]string{"1200000 decisions", "more than the 1000000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewPlan(tt.design, tt.p, tt.d, DefaultBounds)
			if err == nil {
				t.Fatal("accepted")
			}
			var c exitcode.Coder
			if !errors.As(err, &c) || c.ExitCode() != exitcode.Usage {
				t.Errorf("%v: not a usage error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nlacks %q", err, w)
				}
			}
		})
	}
	// A long window can still be measured over a shorter span, on request.
	if _, err := NewPlan(design.RedisFixedWindow, params(100, time.Hour, 1), 5*time.Minute, DefaultBounds); err != nil {
		t.Errorf("a 5m span of a 1h window refused: %v", err)
	}
}

// A boundary burst the embedded Redis cannot answer is skipped, and said
// so, while the steady run still measures.
func TestPlanSkipsAnUnanswerableBoundary(t *testing.T) {
	t.Parallel()
	pl, err := NewPlan(design.RedisFixedWindow, params(200, time.Second, 1), 0, DefaultBounds)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Boundary || !strings.Contains(pl.Skipped, "4000 decisions/s") {
		t.Errorf("boundary %v, skipped %q; want it skipped for needing 4000/s", pl.Boundary, pl.Skipped)
	}
}
