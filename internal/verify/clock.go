package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/target"
)

// clockReading is one reading of a reference: this machine's clock minus
// the reference's, within ±uncertainty.
type clockReading struct {
	offset, uncertainty time.Duration
}

// readClock reads ref once. The reference was read somewhere between the
// two local readings around the request, so the offset is taken at their
// middle and is uncertain by half the round trip, plus half the
// reference's resolution.
func readClock(ctx context.Context, ref *target.Clock, now func() time.Time) (clockReading, error) {
	t0 := now()
	at, res, err := ref.Read(ctx)
	t1 := now()
	if err != nil {
		return clockReading{}, fmt.Errorf("read the reference clock (%s): %w", ref.Name, err)
	}
	half := t1.Sub(t0) / 2
	return clockReading{
		offset:      t0.Add(half).Sub(at.Add(res / 2)),
		uncertainty: half + res/2,
	}, nil
}

// combineClock is what the readings at a run's start and end say of its
// whole span: their mean offset, uncertain by the larger reading's
// uncertainty plus half of how far the offset moved between them (the
// clocks' drift over the run).
func combineClock(name string, a, b clockReading) history.Clock {
	mean := a.offset + (b.offset-a.offset)/2
	drift := b.offset - a.offset
	if drift < 0 {
		drift = -drift
	}
	return history.Clock{Offset: mean, Uncertainty: max(a.uncertainty, b.uncertainty) + drift/2, Reference: name}
}

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
