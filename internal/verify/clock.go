package verify

import (
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/history"
)

// clockNote says where a segment's clock stood against the reference.
func clockNote(c history.Clock) string {
	if c.Reference == "" {
		return ""
	}
	return fmt.Sprintf("this machine's clock was %v from the shared reference (%s, read at the start and the end), ±%v: report merge moves this history by that much and widens each request's send-receive interval by the uncertainty, so merged ceilings stay bounds",
		c.Offset.Round(time.Microsecond), c.Reference, c.Uncertainty.Round(time.Microsecond))
}

// sharedNotes say what a run that is one of several was: its segment, how
// late it started, and where its clock stood.
func sharedNotes(h *history.History, o Options, clockErr error) []string {
	var out []string
	if m := h.Meta; m.Segment != "" {
		out = append(out, fmt.Sprintf("this run sent segment %s of the plan: report merge joins it with the other segments' runs", m.Segment))
	}
	if !o.StartAt.IsZero() {
		out = append(out, lateNote(o.StartAt, h.Meta.Late))
	}
	if clockErr != nil {
		out = append(out, fmt.Sprintf("this machine's clock could not be compared with a shared reference (%v): report merge trusts it as it is", clockErr))
	} else if n := clockNote(h.Meta.Clock); n != "" {
		out = append(out, n)
	}
	return out
}

// lateNote says when a run started against the common start it was given.
func lateNote(at time.Time, late time.Duration) string {
	return fmt.Sprintf("the traffic started %v after the common start %s (on this machine's clock)", late.Round(time.Microsecond), at.UTC().Format(time.RFC3339Nano))
}
