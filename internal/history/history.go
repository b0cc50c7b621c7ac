package history

import (
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
)

// NoTime marks a Record time the target did not report (Decided) or that
// does not exist (RetryAfter absent).
const NoTime time.Duration = -1

// NoRound marks a record that belongs to no race round or boundary phase.
const NoRound int32 = -1

// Record is one request as the traffic engine saw it. Times are offsets from
// Meta.Start, so a record is a fixed-size value with no pointers.
//
// Precision once stored in a History: Intended is exact; Sent, Received and
// Decided are exact to the nanosecond within ±0.53 s of Intended, to the
// microsecond within ±8.9 min and to the millisecond beyond (rounded down);
// RetryAfter likewise by its own size. NoTime is always kept exactly.
type Record struct {
	Intended time.Duration // when the schedule said to send it
	Sent     time.Duration // when it was handed to the target
	Received time.Duration // when the answer (or error) came back
	// Decided is when the target says it decided (a server timestamp mapped
	// onto this run's clock), or NoTime. When known, ceiling bounds meet.
	Decided    time.Duration
	RetryAfter time.Duration // from the answer, or NoTime when absent
	Identity   uint32        // index into Meta.Identities
	Round      int32         // race round / boundary phase, or NoRound
	Gateway    uint16        // index into Meta.Gateways
	Endpoint   uint8         // index into Meta.Endpoints
	Outcome    decision.Outcome
	By         decision.By
	// Attempt is 0 for a request a client sent for the first time, k for
	// its k-th retry after a denial (the retry traffic option).
	Attempt uint8
	// Told is, for a retry, the wait the previous answer asked for and the
	// client's policy honoured (its Retry-After, or its reset), or NoTime
	// when it asked for none or the client honoured none. Waited is how
	// long the client waited from receiving that answer to sending this
	// retry. Both are kept to the same precision as RetryAfter, and only
	// for retries: a first attempt reads back zero for both.
	Told, Waited time.Duration
}

// Fault is a fault the run injected, for the after-fault measures.
type Fault struct {
	// At and For are when the fault was applied and how long it held, as
	// the run recorded them (see traffic.Hook); Planned is the scenario's
	// offset for it, which a hook starting late may be some milliseconds
	// before At. Planned names the fault: machines running one scenario
	// share it, and a merge keeps it as the scenario says (not moved onto
	// the merge's time line).
	At, For time.Duration
	Planned time.Duration
	Action  string
	// Stopped and Answered, for a real failover, are when the old primary
	// first refused or failed a write and when the new one first took one:
	// between them lies the election. Zero when not observed.
	Stopped, Answered time.Duration
	// Demoted, for a real failover whose old primary still took writes
	// once the new one had taken its first (Sentinel's graceful failover),
	// is when it first refused one: gateways still on it wrote counts the
	// new primary never saw until then. Zero when not seen.
	Demoted time.Duration
	// Held, for a failover with a replica_lag, is when the replica was
	// cut off from the primary: counts admitted after it never reached
	// the replica. Zero when no lag was set up.
	Held time.Duration
	// Read, for a failover whose counts_lost was measured, is when the
	// new primary's counters were read: a count that aged out of its
	// window by then was not counted as lost. Zero when not read.
	Read time.Duration
	// Shard, for a real failover on a Redis Cluster, is the shard it acted
	// on, named as in Meta.Shards (its primary's address when the run
	// started); "" elsewhere.
	Shard string
}

// End is when f stopped acting on the deployment: its duration's end, and
// for a real failover the new primary's first write or the old one's
// demotion, whichever came last.
func (f Fault) End() time.Duration { return max(f.At+f.For, f.Answered, f.Demoted) }

// Meta describes the run a history belongs to.
type Meta struct {
	Scenario   string
	Start      time.Time  // wall clock of offset 0
	Limit      rate.Limit // the published limit, per identity
	Identities []string
	// Shards, when the run's Redis was a Cluster, names for each identity
	// (same order as Identities) the shard holding its keys: the address
	// of the primary that owned the slot of the identity's keys when the
	// run started. Nil when not a Cluster (or not known); "" for an
	// identity whose slot no primary served.
	Shards    []string
	Gateways  []string
	Endpoints []string
	// Boundaries are the window boundaries a boundary pattern aimed at, and
	// BoundarySpan the half-width of the span counted around each.
	Boundaries   []time.Duration
	BoundarySpan time.Duration
	// Aims say how each of Boundaries was found, in the same order; nil in
	// histories written before they were recorded.
	Aims   []Aim
	Faults []Fault
	// Rounds is the number of race rounds fired (race pattern only).
	Rounds int
	// Workers is the open model's worker pool: the most requests that
	// could be in flight at once (0: closed model, or not recorded).
	Workers int
	// HeaderForms names the rate-limit header families the target's
	// answers carried (http targets: "retry-after", "draft-11", "draft-07",
	// "draft-06", "x-ratelimit"), nil when none or not an http target.
	HeaderForms []string
	// Retry describes the clients' retry policy when they retried denied
	// requests ("honor retry-after, exponential backoff from 100ms, full
	// jitter, at most 4 attempts"), "" when they did not.
	Retry string
	// Segment is the share of the plan this run sent when several
	// processes shared it ("1/3:2/3", see workload.Segment), "" for the
	// whole.
	Segment string
	// Late is how long after the common start it was given (verify
	// --start-at) the run's clock started: zero when on time or when
	// there was none.
	Late time.Duration
	// WallMoved is how far this machine's wall clock moved against its
	// steady clock while the run's traffic lasted: its wall time elapsed
	// minus its steady time elapsed, near zero on a machine whose clock is
	// kept by slewing. A step, or a VM catching its clock up, shows here;
	// limiters on this machine that read the wall clock (Redis TIME, the
	// embedded Redis, rlctl's own gateways) saw their windows move by it,
	// while every offset in the history is on the steady clock.
	WallMoved time.Duration
	// RedisMoved is how far the target's Redis clock (TIME, read as the
	// traffic started and once it was over) moved against this machine's
	// steady clock, less what the readings' round trips leave uncertain:
	// zero when it kept pace as far as they tell, or was not read. A
	// Redis on another machine whose clock was stepped shows here.
	RedisMoved time.Duration
	// Clock is this machine's clock against a reference shared by the
	// machines of one run, the zero Clock when not measured.
	Clock Clock
	// Drops counts the requests the run dropped, which have no Record
	// (see Drops): like Faults, what the run did rather than what it was.
	Drops Drops
	// Statuses counts an http target's answers by HTTP status, nil for
	// other targets (and histories written before they were counted).
	Statuses map[int]int64
}

// Aim is how the boundary pattern found a window boundary it fired at, and
// so how surely its shots straddled the target's own edge.
type Aim struct {
	// How is "epoch" (epoch-aligned windows: align: epoch, or learned),
	// "first-request" (a window opened by a probe) or "headers" (the
	// target's announced reset).
	How string
	// Uncertainty is how far the target's edge may lie from the boundary
	// given how it was found; negative when not known at all (auto
	// alignment that learned nothing and fell back on epoch).
	Uncertainty time.Duration
}

// Clock is how far a machine's clock was from a shared reference (the
// target Redis's TIME, or an HTTP gateway's clock) during a run: Offset is
// local minus reference, known to within ±Uncertainty (half the round
// trip of the reading, plus the reference's resolution, plus how far the
// offset moved between the readings at start and end). Merge uses it to put
// the histories of several machines on the reference's time line.
type Clock struct {
	Offset, Uncertainty time.Duration
	// Reference names what was read ("redis TIME", "http Decided-At",
	// "http Date"), "" when nothing was.
	Reference string
}

// WallMoved is how far the wall clock moved against the steady one from
// start to end (both read by time.Now): the wall time between them minus
// the steady time (Meta.WallMoved).
func WallMoved(start, end time.Time) time.Duration {
	return end.Round(0).Sub(start.Round(0)) - end.Sub(start)
}
