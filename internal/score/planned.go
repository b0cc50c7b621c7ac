package score

import (
	"math"
	"time"

	"github.com/rlctl/rlctl/internal/design"
)

// FaultGrace is how long after a planned fault ends its effects may still
// show (connections re-established, a pool refilled) before an undecided
// request counts as unplanned.
const FaultGrace = 500 * time.Millisecond

// OutageGap joins undecided requests less than this apart into one outage.
const OutageGap = 500 * time.Millisecond

// forever stands for "until the end of the run".
const forever = time.Duration(math.MaxInt64)

// Fault is a fault a run applied, as its history recorded it.
type Fault struct {
	Action  string
	At, For time.Duration
	// Stopped and Answered, for a real failover, are when the old primary
	// first failed a write and when the new one first took one (zero when
	// not observed).
	Stopped, Answered time.Duration
	// Demoted, for a real failover, is when the old primary, still taking
	// writes after the new one took its first, refused one (zero when not
	// seen).
	Demoted time.Duration
}

// End is when f stopped acting on the deployment: its duration's end, and
// for a real failover the new primary's first write or the old one's
// demotion, whichever came last.
func (f Fault) End() time.Duration { return max(f.At+f.For, f.Answered, f.Demoted) }

// unended reports whether f's old primary was seen to stop taking writes
// but no new one took a write before the run ended: an election that never
// ended in the run.
func (f Fault) unended() bool { return f.Stopped > 0 && f.Answered == 0 }

// Span is a stretch of a run, from its start.
type Span struct{ From, To time.Duration }

// PlannedSpans are the stretches of a run its planned faults account for,
// in which undecided requests are the fault's effect rather than an
// outage: a timed fault for its duration, one without a duration until the
// end (redis-down, redis-latency, gateway-down), a failover until one
// window after it ended (the new primary took a write, and an old primary
// still taking writes was demoted: Fault.End): gateways notice it only
// once they reach the new primary, and may deny for a window from then;
// an instantaneous reset for a moment. Each is widened by FaultGrace. A real failover whose
// election never ended accounts for the rest of the run.
func PlannedSpans(faults []Fault, window time.Duration) []Span {
	var out []Span
	for _, f := range faults {
		end := forever
		switch {
		case f.For > 0:
			end = f.At + f.For + FaultGrace
		case f.Action == design.FaultFailover && f.unended():
			// A real failover that elected no primary before the end.
		case f.Action == design.FaultFailover || (f.Action == design.FaultKillPrimary && f.Answered > 0):
			end = f.End() + window + FaultGrace
		case f.Action == design.FaultRedisReset:
			end = f.At + FaultGrace
		}
		out = append(out, Span{From: f.At, To: end})
	}
	return out
}
