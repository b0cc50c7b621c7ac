package score

import (
	"math/big"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/threshold"
)

// Target kinds, as scenario files name them.
const (
	KindSimulated   = "simulated"
	KindHTTP        = "http"
	KindRedisScript = "redis-script"
)

// Claim is what a scenario claims and how it was set up to show it.
type Claim struct {
	Name string
	// Shows is design.ShowsFlaw when the scenario passes by reproducing a
	// flaw, else design.ShowsHolds ("" reads as holds).
	Shows string
	// Kind is the target kind ("" when unknown: a run saved before reports
	// said).
	Kind string
	// Algorithm is a simulated target's design, "" otherwise.
	Algorithm string
	Limit     rate.Limit
	// Thresholds are the scenario's; none means the published cap is the
	// claim (DefaultThreshold).
	Thresholds []threshold.Threshold
	// MaxErrorRate is the largest share of the plan that may go dropped,
	// and of sent requests that may go undecided, before the run counts as
	// not having measured the design.
	MaxErrorRate float64
	// Endpoints are the failure policies, one per endpoint.
	Endpoints []Endpoint
	// EnvelopeBurst is the bucket capacity of the design's envelope (0:
	// the published count), for the bucket's note.
	EnvelopeBurst float64
}

// Endpoint is one endpoint's failure policy.
type Endpoint struct {
	Name                string
	OnError, OnFailover string
}

// Facts are what a run measured and did.
type Facts struct {
	// Metrics are the analysis's figures (and those read beside the
	// history, like counts_lost), keyed by metric name.
	Metrics map[string]float64
	// Outages are the stretches in which the limiter did not decide
	// outside the planned faults (see PlannedSpans).
	Outages []Outage
	// Stuck says why the run left its Redis unusable: a user's script
	// that rlctl's own call timed out on could not be stopped, so the
	// server answers BUSY to every client. "" when it did not.
	Stuck string
	// Unapplied says, one entry per fault, which planned faults could not
	// be carried out and why; nil when every one was.
	Unapplied []string
	// Faults is how many faults the scenario planned, and Applied those
	// the run carried out, as it recorded them.
	Faults  int
	Applied []Fault
	// Interrupted is set when the run was cut short; Ran is how long its
	// traffic ran and Planned how long the scenario meant it to.
	Interrupted  bool
	Ran, Planned time.Duration
	// WallMoved is how far this machine's wall clock moved against its
	// steady clock while the traffic lasted (history.Meta.WallMoved).
	WallMoved time.Duration
	// RedisMoved is how far the target's Redis clock moved against this
	// machine's steady clock over the run, beyond what its readings leave
	// uncertain (history.Meta.RedisMoved).
	RedisMoved time.Duration
	// FirstErrors are the first distinct errors the requests met.
	FirstErrors []string
	// Statuses counts an http target's answers by status code; nil for
	// other targets and for runs saved before they were counted.
	Statuses map[int]int64
	// Unanswered counts the errors that came after the request reached
	// the target (decision.ByUnanswered).
	Unanswered int64
	// Stamps says how the target's own decision times fared.
	Stamps Stamps
	// Boundaries are the boundary pattern's shots, nil for other patterns.
	Boundaries []Boundary
	// Race is the race pattern's rounds, nil for other patterns.
	Race *Race
	// Drops explains the dropped requests (nil when none were dropped).
	Drops *Drops
	// HeaderForms names the rate-limit header families the target spoke.
	HeaderForms []string
	// Retry describes the clients' retry policy, "" when they did not
	// retry.
	Retry string
	// EmbeddedRate is the decisions per second a run on the embedded
	// Redis made, 0 when the run did not use the embedded Redis.
	EmbeddedRate float64
	// Embedded says the run's Redis was the embedded one, which answers
	// inside rlctl's own process.
	Embedded bool
	// BoundaryPattern says the traffic was the boundary pattern, whether
	// or not it fired a shot (Boundaries).
	BoundaryPattern bool
	// Merge describes the runs merged into this one, nil for a single run.
	Merge *Merge
	// DeniedFirst counts the identities whose very first request, sent
	// alone, the limiter denied, of Opened with a first request answered
	// (analysis.Conduct); 0 for one segment of a shared run, whose first
	// request may follow another machine's.
	DeniedFirst, Opened int
	// FromSent are the latency figures (p50_ms … max_ms) counted from when
	// each request really left, not from when it was due as Metrics'
	// are: the answers' own time, without rlctl's send lag.
	FromSent map[string]float64
	// Notes are findings the conductor made beside the history (how a
	// failover was staged, what Redis held after the run), kept as said.
	Notes []string
}

// Outage is a stretch of a run in which requests went undecided outside
// any planned fault, with the requests sent in it.
type Outage struct {
	From, To                               time.Duration
	FailOpen, FailClosed, Fallback, Errors int64
}

// Undecided is every request of o the limiter did not decide.
func (o Outage) Undecided() int64 { return o.FailOpen + o.FailClosed + o.Fallback + o.Errors }

// Stamps are how the decision times a target reported (Redis TIME, an
// HTTP gateway's X-RateLimit-Decided-At) fit rlctl's own clock.
type Stamps struct {
	// Total counts the answers that carried a decision time, Ignored those
	// whose time, after the clock shift, lay outside their own request's
	// send and receive: the analysis used send and receive for them.
	Total, Ignored int64
	// Untrusted names the gateways whose times disagreed so often that
	// all of them were ignored.
	Untrusted []string
	// Shift is how far the times were moved onto rlctl's clock (the
	// median shift when the gateways' clocks jitter), 0 when they fit.
	Shift time.Duration
}

// Boundary is one shot of the boundary pattern: a quota fired just before
// a window boundary and one just after.
type Boundary struct {
	At time.Duration
	// Aim is how the boundary was found: workload.AlignEpoch,
	// AlignFirstRequest, or "headers" (the target's reset announcement);
	// "" when the history did not record it.
	Aim string
	// Uncertainty is how far the target's true window edge may lie from
	// At, given how it was found; negative when unknown.
	Uncertainty time.Duration
	// Span is the half-width of the shots around At.
	Span time.Duration
	// Rolled says the answers show the window rolling between the shots:
	// a request of the after-shot admitted after a request of the same
	// identity was denied in the before-shot.
	Rolled bool
	// Before counts the answered requests aimed before the edge, Early
	// those decided before it: slow answers put a before-shot decided
	// after the edge in the after-shot's window. AdmittedBefore counts
	// those admitted: the pattern leaves the window before the edge idle,
	// so a before-shot mostly denied met a window already spent.
	Before, Early, AdmittedBefore int64
}

// Race is what the race pattern's releases did: one identity's request
// through every gateway at once, in one round.
type Race struct {
	// Releases were made; Concurrent of them had two requests at least in
	// flight at one instant (the second sent before the first answered).
	Releases, Concurrent int
}

// Drops explains why requests were dropped.
type Drops struct {
	Dropped int64
	// SlowTarget: every worker was waiting on an answer.
	SlowTarget bool
	Workers    int
	// Service is the mean time an answer took, Rate the offered rate per
	// second.
	Service time.Duration
	Rate    float64
}

// Merge describes the runs a merged run joins.
type Merge struct {
	Runs []Segment
	// Missing is the share of the plan no run sent ("1/2:1"), "" when
	// the runs tile it.
	Missing string
}

// Segment is one run of a merge: the share of the plan it sent and its
// clock against the shared reference.
type Segment struct {
	// Name is the segment as given ("0/2", "1/4:2/4"), "" for the whole
	// plan; From and To are its bounds.
	Name     string
	From, To *big.Rat
	// Label, when set, names the run in messages instead ("eu/run-1
	// (segment 0/2)").
	Label string
	// Offset and Uncertainty are the machine's clock against Reference
	// (zero Reference: not measured); Late how long after the common start
	// its traffic began.
	Offset, Uncertainty time.Duration
	Reference           string
	Late                time.Duration
}
