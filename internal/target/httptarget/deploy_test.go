package httptarget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/fault"
	"github.com/rlctl/rlctl/internal/fault/deploy"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/target"
)

// A failover whose election never finished was not carried out, and says
// whether the run ended in the middle of it or outlasted the whole watch.
func TestUnfinishedFailoverIsUnappliedAndSaysWhetherTheRunEndedFirst(t *testing.T) {
	start := time.Now()
	asked := start.Add(1500 * time.Millisecond)
	for _, tt := range []struct {
		name  string
		ended time.Time
		want  string
	}{
		{"run ended first", asked.Add(1500 * time.Millisecond), "failover at 1.5s did not finish: the run ended 1.5s after the failover began, before a new primary took a write"},
		{"watched to the limit", asked.Add(electionLimit + time.Second), "failover at 1.5s did not finish: no new primary took a write within 30s"},
		{"not ended by the run", time.Time{}, "failover at 1.5s did not finish: no new primary took a write within 30s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := history.New(history.Meta{Start: start, Faults: []history.Fault{{At: 1500 * time.Millisecond, Action: "failover"}}}, 0)
			d := &deployment{elections: map[int]*election{0: {asked: asked, ended: tt.ended}}}
			var f target.Finished
			d.finish(context.Background(), h, &f)
			if len(f.Unapplied) != 1 || !strings.Contains(f.Unapplied[0], tt.want) {
				t.Errorf("unapplied %q, want one entry saying %q", f.Unapplied, tt.want)
			}
			if h.Meta.Faults[0].Stopped != 1500*time.Millisecond || h.Meta.Faults[0].Answered != 0 {
				t.Errorf("election recorded as %+v, want stopped at 1.5s and never answered", h.Meta.Faults[0])
			}
		})
	}
}

// A failover step that the run's end cancelled says the run ended first
// (or during it); a step the deployment refused says it could not be
// carried out, with the deployment's error, never "context canceled".
func TestCancelledFailoverSaysTheRunEnded(t *testing.T) {
	start := time.Now()
	for _, tt := range []struct {
		name  string
		asked time.Time
		err   error
		want  string
	}{
		{"cancelled before it was asked", time.Time{}, fmt.Errorf("observe: %w", context.Canceled), "failover at 1.5s was not carried out: the run ended first"},
		{"cancelled once asked", start.Add(1500 * time.Millisecond), fmt.Errorf("SENTINEL FAILOVER: %w", context.Canceled), "failover at 1.5s did not finish: the run ended"},
		{"refused", start.Add(1500 * time.Millisecond), errors.New("NOGOODSLAVE No suitable replica to promote"), "failover at 1.5s could not be carried out: NOGOODSLAVE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := history.New(history.Meta{Start: start, Faults: []history.Fault{{At: 1500 * time.Millisecond, Action: "failover"}}}, 0)
			el := &election{asked: tt.asked}
			el.fail(tt.err)
			d := &deployment{elections: map[int]*election{0: el}}
			var f target.Finished
			d.finish(context.Background(), h, &f)
			if len(f.Unapplied) != 1 || !strings.Contains(f.Unapplied[0], tt.want) || strings.Contains(f.Unapplied[0], "context canceled") {
				t.Errorf("unapplied %q, want one entry saying %q", f.Unapplied, tt.want)
			}
		})
	}
}

// A failover whose new primary took a write was carried out: a note says
// how, and nothing is unapplied.
func TestFinishedFailoverIsANote(t *testing.T) {
	start := time.Now()
	asked := start.Add(time.Second)
	h := history.New(history.Meta{Start: start, Faults: []history.Fault{{At: time.Second, Action: "failover"}}}, 0)
	seen := deploy.Election{Old: "127.0.0.1:7000", New: "127.0.0.1:7001", Election: fault.Election{Answered: asked.Add(800 * time.Millisecond)}}
	d := &deployment{elections: map[int]*election{0: {asked: asked, seen: seen}}}
	var f target.Finished
	d.finish(context.Background(), h, &f)
	if len(f.Unapplied) != 0 {
		t.Errorf("unapplied %q, want none", f.Unapplied)
	}
	if notes := strings.Join(f.Notes, "\n"); !strings.Contains(notes, "the new primary took a write 800ms after the failover was asked for") {
		t.Errorf("notes %q, want the election's length", notes)
	}
	if got := h.Meta.Faults[0].Answered; got != 1800*time.Millisecond {
		t.Errorf("answered at %s, want 1.8s", got)
	}
}
