package inject

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/history"
)

// A failover whose step the run's end cancelled did not finish because
// the run ended, which is what its report says; a step the deployment
// refused could not be carried out, with the deployment's error.
func TestFailoverCutByTheRunsEndSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		begun bool
		err   error
		want  string
	}{
		{"cancelled under way", true, fmt.Errorf("SENTINEL FAILOVER: %w", context.Canceled),
			"failover at 1.2s did not finish: the run ended"},
		{"cancelled before it began", false, context.Canceled,
			"failover at 1.2s was not carried out: the run ended first"},
		{"refused", true, errors.New("NOGOODSLAVE No suitable replica to promote"),
			"failover at 1.2s could not be carried out: NOGOODSLAVE No suitable replica to promote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			el := &election{}
			if tc.begun {
				el.begin()
			}
			el.set(time.Time{}, time.Time{}, tc.err)
			h := &history.History{Meta: history.Meta{
				Start:  time.Now().Add(-1300 * time.Millisecond),
				Faults: []history.Fault{{At: 1200 * time.Millisecond, Action: "failover"}},
			}}
			_, unapplied := (&Faults{elections: []*election{el}}).RecordElections(h)
			if len(unapplied) != 1 || !strings.Contains(unapplied[0], tc.want) {
				t.Errorf("unapplied %q, want one saying %q", unapplied, tc.want)
			}
			if strings.Contains(strings.Join(unapplied, " "), "context canceled") {
				t.Errorf("unapplied %q speaks of the run's cancellation as the deployment's error", unapplied)
			}
		})
	}
}
