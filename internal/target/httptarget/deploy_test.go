package httptarget

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/target"
)

// An election the run outlasted unseen is told apart from one the run
// ended in the middle of: only the first waited the whole watch.
func TestFailoverNoteSaysWhetherTheRunEndedFirst(t *testing.T) {
	start := time.Now()
	asked := start.Add(1500 * time.Millisecond)
	for _, tt := range []struct {
		name  string
		ended time.Time
		want  string
	}{
		{"run ended first", asked.Add(1500 * time.Millisecond), "the run ended 1.5s after the failover was asked for, before a new primary took a write"},
		{"watched to the limit", asked.Add(electionLimit + time.Second), "no new primary took a write within 30s"},
		{"not ended by the run", time.Time{}, "no new primary took a write within 30s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := history.New(history.Meta{Start: start, Faults: []history.Fault{{At: 1500 * time.Millisecond, Action: "failover"}}}, 0)
			d := &deployment{elections: map[int]*election{0: {asked: asked, ended: tt.ended}}}
			var f target.Finished
			d.finish(context.Background(), h, &f)
			notes := strings.Join(f.Notes, "\n")
			if !strings.Contains(notes, tt.want) {
				t.Errorf("notes %q, want one saying %q", notes, tt.want)
			}
			if h.Meta.Faults[0].Stopped != 1500*time.Millisecond || h.Meta.Faults[0].Answered != 0 {
				t.Errorf("election recorded as %+v, want stopped at 1.5s and never answered", h.Meta.Faults[0])
			}
		})
	}
}
