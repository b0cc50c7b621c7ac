package traffic

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/workload"
)

// Defaults for the zero values of Plan.
const (
	DefaultWorkers = 256
	DefaultGrace   = time.Second
)

// Plan says what traffic to send. Duration and MaxRequests are both required:
// every run is bounded and stops by itself at whichever comes first.
type Plan struct {
	Model   string // workload.ModelOpen (default) or workload.ModelClosed
	Pattern string // workload.PatternConstant (default), burst, ramp, boundary, race
	// Rate is the offered load, all identities together (constant; ramp's
	// final rate).
	Rate rate.Limit
	// RampFrom is ramp's starting rate; zero starts from nothing.
	RampFrom    rate.Limit
	Duration    time.Duration
	MaxRequests int64
	// Workers bounds requests in flight in the open model (default 256,
	// raised to the largest batch a burst or boundary fires at once).
	Workers int
	// Concurrency is the closed model's number of looping workers
	// (default workload.DefaultConcurrency).
	Concurrency int
	// Identities is how many identities share the load (default 1), named
	// IdentityNames when given, else "user-0".."user-N-1".
	Identities    int
	IdentityNames []string
	// Spread is how one identity's requests go over gateways (round-robin
	// default) when RunOptions.Balancer is nil; Seed makes random
	// reproducible.
	Spread string
	Seed   int64
	// Limit is the target's published limit L per W; zero takes
	// RunOptions.Meta.Limit. Burst, boundary and race need it.
	Limit rate.Limit
	// BurstSize is how many requests per identity a burst fires at once,
	// every window; zero means the whole quota L.
	BurstSize int
	// Align is where the boundary pattern expects windows to roll (auto by
	// default).
	Align string
	// Rounds is the race pattern's number of rounds (default 50).
	Rounds int
	// EndpointShares weights the target's endpoints (index i gets share i);
	// nil spreads evenly.
	EndpointShares []float64
	// Retry, in the closed model, makes each of the Concurrency looping
	// users a client that obeys its answers: client c speaks for identity
	// c mod Identities and retries a denied request as the policy says
	// (see workload.RetryPolicy). Nil: no retries.
	Retry *workload.RetryPolicy
	// Think is how long a closed-model client pauses after an answered
	// request before its next one (with Retry or on its own).
	Think time.Duration
	// Segment, unless it is the whole (the zero value), makes this process
	// run only its share of the plan, so that processes running the
	// segments that tile [0, 1) together send the whole plan once (see
	// SegmentBy for what is shared out).
	Segment workload.Segment
	// SegmentBy is what a segment takes its share of: whole identities
	// (workload.SegmentByIdentities, the default) or the requests of every identity
	// (workload.SegmentByRequests).
	SegmentBy string
}

// Hook is an action run at an offset of the run's clock (fault injection:
// failover, redis-down, ...). Fn runs on its own goroutine; its context is
// cancelled when the run ends.
//
// A hook named like a fault of RunOptions.Meta.Faults (its Action) and due
// at its offset applies that fault: the run records when Fn actually
// started as the fault's At, since on a loaded machine a hook may start
// late, and the figures must measure the fault as it was. When Holds is set,
// Fn returns when the fault ends (it held the fault for its For), and the
// fault's For becomes how long it actually held.
type Hook struct {
	At    time.Duration
	Name  string
	Fn    func(ctx context.Context)
	Holds bool
}

// Stats is a snapshot of a run in progress, for progress displays.
type Stats struct {
	Sent, Allowed, Denied, Errors, Dropped uint64
	Elapsed, Planned                       time.Duration
	// Rate is answers (allowed, denied, errors) per second so far.
	Rate float64
	// Done is set on the last call, when the run has ended.
	Done bool
}

// Completed is the number of requests that came back or were dropped.
func (s Stats) Completed() uint64 { return s.Allowed + s.Denied + s.Errors + s.Dropped }

// RunOptions are what the caller adds around a Plan.
type RunOptions struct {
	// Meta pre-fills the history's Meta (scenario, limit, faults); Run fills
	// Start, Identities, Gateways, Endpoints, Boundaries and Rounds.
	Meta  history.Meta
	Hooks []Hook
	// Progress, when set, is called every ProgressEvery (100 ms by default)
	// from one goroutine, and once more with Done set at the end.
	Progress      func(Stats)
	ProgressEvery time.Duration
	// Balancer picks the gateway for each request; nil builds one from
	// Plan.Spread.
	Balancer workload.Balancer
	// Grace is how long in-flight requests may finish after the schedule
	// ends or the context is cancelled (default 1 s); then they are
	// cancelled and come back as errors.
	Grace time.Duration
	// OnError, when set, hears every request's error, and the error a
	// failure policy answered for (Response.Cause), from many goroutines
	// at once, so the caller can say what went wrong.
	OnError func(error)
	// StartAt, when set, is the wall-clock instant the run's clock starts
	// (the same for every process running a segment of one plan): Run
	// connects first, then waits for it. A run that gets there late starts
	// at once and records how late in Meta.Late, unless it is late by the
	// plan's whole duration (it would share no instant with the others):
	// then it returns an error wrapping ErrLate and sends nothing.
	StartAt time.Time
	// Now is the wall clock (time.Now when nil) that StartAt, Meta.Start
	// and the target's decision times are read against; tests skew it to
	// play a machine whose clock is off.
	Now func() time.Time
	// SpillDir is where a run that may record more than KeepInMemory
	// requests spills its history (os.TempDir() when ""); the caller
	// closes the history (history.History.Close) to remove the file.
	SpillDir string
	// KeepInMemory is the most records the run keeps in memory; 0 is
	// history.InMemory.
	KeepInMemory int
}

// ErrLate is wrapped by the error of a run that reached RunOptions.StartAt
// too late to share any of its duration with the others.
var ErrLate = errors.New("too late for the common start")

// ErrInvalidPlan is wrapped by every Plan validation error.
var ErrInvalidPlan = errors.New("invalid traffic plan")

func planErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidPlan, fmt.Sprintf(format, a...))
}

// normalize fills defaults and checks p against the target's gateways and
// endpoints. Its parts run in this order, so that of two mistakes the same
// one is reported first.
func (p Plan) normalize(meta history.Meta, gateways, endpoints int) (Plan, error) {
	if p.Duration <= 0 {
		return p, planErr("duration must be > 0")
	}
	if p.MaxRequests <= 0 {
		return p, planErr("max requests must be > 0")
	}
	if p.Model == "" {
		p.Model = workload.ModelOpen
	}
	if p.Pattern == "" {
		p.Pattern = workload.PatternConstant
	}
	if p.Spread == "" {
		p.Spread = workload.SpreadRoundRobin
	}
	if err := p.normalizeSegment(); err != nil {
		return p, err
	}
	if p.Align == "" {
		p.Align = workload.AlignAuto
	}
	if p.Limit.IsZero() {
		p.Limit = meta.Limit
	}
	if err := p.normalizeIdentities(); err != nil {
		return p, err
	}
	if err := p.checkTarget(gateways, endpoints); err != nil {
		return p, err
	}
	switch p.Spread {
	case workload.SpreadRoundRobin, workload.SpreadRandom, workload.SpreadSticky:
	default:
		return p, planErr("unknown spread %q (want round-robin, random or sticky)", p.Spread)
	}
	switch p.Model {
	case workload.ModelOpen:
		if p.Retry != nil || p.Think != 0 {
			return p, planErr("retries and think time need the closed model: clients that wait for their answers")
		}
	case workload.ModelClosed:
		err := p.normalizeClosed(gateways)
		return p, err
	default:
		return p, planErr("unknown model %q (want open or closed)", p.Model)
	}
	batch, err := p.normalizePattern()
	if err != nil {
		return p, err
	}
	if p.Workers < 0 {
		return p, planErr("negative workers")
	}
	if p.Workers == 0 {
		p.Workers = max(DefaultWorkers, batch)
	}
	return p, nil
}

// normalizeSegment checks what a segment shares out (identities by
// default) against the pattern.
func (p *Plan) normalizeSegment() error {
	switch p.SegmentBy {
	case "":
		p.SegmentBy = workload.SegmentByIdentities
	case workload.SegmentByIdentities, workload.SegmentByRequests:
	default:
		return planErr("unknown segment share %q (want identities or requests)", p.SegmentBy)
	}
	if p.SegmentBy == workload.SegmentByRequests && !p.Segment.IsWhole() && (p.Pattern == workload.PatternRace || p.Pattern == workload.PatternBoundary) {
		return planErr("pattern %s splits by identities only: its batches must leave one machine", p.Pattern)
	}
	return nil
}

// normalizeIdentities takes the number of identities from their names when
// given (they must agree), at least one.
func (p *Plan) normalizeIdentities() error {
	if len(p.IdentityNames) > 0 {
		if p.Identities != 0 && p.Identities != len(p.IdentityNames) {
			return planErr("%d identities but %d identity names", p.Identities, len(p.IdentityNames))
		}
		p.Identities = len(p.IdentityNames)
	}
	if p.Identities <= 0 {
		p.Identities = 1
	}
	return nil
}

// checkTarget checks the target's numbers of gateways and endpoints, and
// the endpoints' shares against them.
func (p *Plan) checkTarget(gateways, endpoints int) error {
	if gateways <= 0 || gateways > 1<<16-1 {
		return planErr("target has %d gateways (want 1..65535)", gateways)
	}
	if endpoints <= 0 || endpoints > 255 {
		return planErr("target has %d endpoints (want 1..255)", endpoints)
	}
	if p.EndpointShares == nil {
		return nil
	}
	if len(p.EndpointShares) != endpoints {
		return planErr("%d endpoint shares for %d endpoints", len(p.EndpointShares), endpoints)
	}
	sum := 0.0
	for _, s := range p.EndpointShares {
		if s < 0 {
			return planErr("negative endpoint share")
		}
		sum += s
	}
	if sum <= 0 {
		return planErr("endpoint shares sum to zero")
	}
	return nil
}

// normalizeClosed checks and fills the closed model's part: the constant
// pattern only, its concurrency, think time and retry policy.
func (p *Plan) normalizeClosed(gateways int) error {
	if p.Pattern != workload.PatternConstant {
		return planErr("the closed model runs the constant pattern only, not %q", p.Pattern)
	}
	if p.Concurrency <= 0 {
		p.Concurrency = workload.DefaultConcurrency(gateways, p.Identities)
	}
	if p.Think < 0 {
		return planErr("negative think time")
	}
	if p.Retry != nil {
		r, err := p.Retry.Normalize()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidPlan, err)
		}
		p.Retry = &r
	}
	return nil
}

// normalizePattern checks and fills the open model's pattern and returns
// the largest batch it fires at once, which the default Workers must hold.
func (p *Plan) normalizePattern() (batch int, err error) {
	needLimit := func() error {
		if p.Limit.Count <= 0 || p.Limit.Window <= 0 {
			return planErr("pattern %s needs the published limit", p.Pattern)
		}
		return nil
	}
	batch = 1
	switch p.Pattern {
	case workload.PatternConstant:
		if p.Rate.Count <= 0 || p.Rate.Window <= 0 {
			return 0, planErr("pattern constant needs a rate")
		}
	case workload.PatternRamp:
		if p.Rate.Count <= 0 || p.Rate.Window <= 0 {
			return 0, planErr("pattern ramp needs a rate")
		}
		if p.RampFrom.Count < 0 || (p.RampFrom.Count > 0 && p.RampFrom.Window <= 0) {
			return 0, planErr("bad ramp start rate %s", p.RampFrom)
		}
	case workload.PatternBurst:
		if err := needLimit(); err != nil {
			return 0, err
		}
		if p.BurstSize < 0 {
			return 0, planErr("negative burst size")
		}
		if p.BurstSize == 0 {
			p.BurstSize = int(p.Limit.Count)
		}
		batch = p.BurstSize * p.Identities
	case workload.PatternBoundary:
		if err := needLimit(); err != nil {
			return 0, err
		}
		switch p.Align {
		case workload.AlignEpoch, workload.AlignFirstRequest, workload.AlignAuto:
		default:
			return 0, planErr("unknown align %q (want epoch, first-request or auto)", p.Align)
		}
		batch = 2 * int(p.Limit.Count) * p.Identities
	case workload.PatternRace:
		if err := needLimit(); err != nil {
			return 0, err
		}
		if p.Rounds < 0 {
			return 0, planErr("negative rounds")
		}
		if p.Rounds == 0 {
			p.Rounds = workload.DefaultRounds
		}
	default:
		return 0, planErr("unknown pattern %q (want constant, burst, ramp, boundary or race)", p.Pattern)
	}
	return batch, nil
}

// identityNames returns the names of the plan's identities.
func (p Plan) identityNames() []string {
	if len(p.IdentityNames) > 0 {
		return append([]string(nil), p.IdentityNames...)
	}
	names := make([]string, p.Identities)
	for i := range names {
		names[i] = fmt.Sprintf("user-%d", i)
	}
	return names
}
