package discover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/traffic"
)

// The algorithm classes discover tells apart.
const (
	FixedWindow   = "fixed-window"
	SlidingWindow = "sliding-window" // the weighted two-counter estimate
	SlidingLog    = "sliding-log"
	TokenBucket   = "token-bucket" // GCRA counts here: it admits the same
	LeakyBucket   = "leaky-bucket" // a queue: admits late instead of denying
	Concurrency   = "concurrency"
	None          = "none"
	// Undetermined is a limit that denied but whose refill the run could
	// not observe within its budget or duration.
	Undetermined = "undetermined"
)

// Classes lists the algorithm classes, as help and JSON spell them.
var Classes = []string{FixedWindow, SlidingWindow, SlidingLog, TokenBucket, LeakyBucket, Concurrency, None, Undetermined}

// Where a window starts (the aligned figure).
const (
	AlignEpoch        = "epoch"         // at Unix multiples of the window
	AlignFirstRequest = "first-request" // at an identity's first request
	AlignNone         = "none"          // no windows: buckets, logs
)

// What Retry-After is worth (the retry_after figure).
const (
	RetryMissing = "missing"
	RetryExact   = "exact"
	RetryEarly   = "early" // the client waited as told and was denied again
	RetryLate    = "late"  // admitted before the time it was told
)

// Defaults of Options.
const (
	DefaultBudget        = 300
	DefaultMaxDuration   = 2 * time.Minute
	DefaultMaxIdentities = 12
)

// Options configure a discovery run.
type Options struct {
	// Target is where the probes go: one gateway per URL.
	Target traffic.Target
	// Budget is the most requests any one identity is sent (default
	// DefaultBudget). It is never exceeded.
	Budget int
	// MaxDuration bounds the whole run (default DefaultMaxDuration).
	MaxDuration time.Duration
	// MaxIdentities bounds how many fresh identities the run uses
	// (default DefaultMaxIdentities); a target keyed on source addresses
	// needs one address per identity.
	MaxIdentities int
	// IDPrefix names the run's identities (IDPrefix-0, -1, ...); empty
	// picks rlctl-discover-<random>, so no real user's quota is spent.
	IDPrefix string
}

// Figure is the evidence behind one inferred figure.
type Figure struct {
	// Confidence is from 0 (a guess) to 1 (the probes leave no doubt).
	Confidence float64 `json:"confidence"`
	// Evidence says what was observed, in words and numbers.
	Evidence string `json:"evidence"`
}

// Policy is what the endpoint was found to enforce. A figure that does
// not apply to the class (window_ms of a bucket) is absent.
type Policy struct {
	Algorithm    string  `json:"algorithm"`
	Limit        int64   `json:"limit,omitempty"`
	WindowMS     int64   `json:"window_ms,omitempty"`
	RatePerS     float64 `json:"rate_per_s,omitempty"`
	Burst        float64 `json:"burst,omitempty"`
	Aligned      string  `json:"aligned,omitempty"`
	DenialsCount *bool   `json:"denials_count,omitempty"`
	Shared       *bool   `json:"shared,omitempty"`
	RetryAfter   string  `json:"retry_after,omitempty"`
	// RemainingExact says whether the remaining count the answers
	// published (RateLimit r, RateLimit-Remaining, X-RateLimit-Remaining)
	// matched what the first burst could still spend; absent when none
	// was published.
	RemainingExact *bool    `json:"remaining_exact,omitempty"`
	HeaderForms    []string `json:"header_forms"`
	// DeniedStatus is the status the denials came with.
	DeniedStatus int `json:"denied_status,omitempty"`
	// Evidence holds each figure's evidence and confidence, by the
	// figure's JSON name.
	Evidence map[string]Figure `json:"evidence"`
}

// Window is the policy's window as a duration.
func (p Policy) Window() time.Duration { return time.Duration(p.WindowMS) * time.Millisecond }

// Result is a discovery run's outcome.
type Result struct {
	URLs []string `json:"urls"`
	// Found is false when no limit was found within the budget (or the
	// target answered errors); Summary says which.
	Found   bool   `json:"found"`
	Summary string `json:"summary"`
	Policy  Policy `json:"policy"`
	// Requests is every request sent; PerIdentity the count of each
	// identity, none above Budget.
	Requests    int   `json:"requests"`
	PerIdentity []int `json:"requests_per_identity"`
	Budget      int   `json:"budget"`
	DurationMS  int64 `json:"duration_ms"`
	// Notes say what the probes could not tell apart or had to skip.
	Notes []string `json:"notes,omitempty"`
}

type engine struct {
	p        *prober
	o        Options
	start    time.Time
	deadline time.Time
	res      *Result
}

func (e *engine) before(t time.Time) bool { return t.Before(e.deadline) }

// remaining is the run's time left.
func (e *engine) remaining() time.Duration { return time.Until(e.deadline) }

func (e *engine) note(format string, args ...any) {
	e.res.Notes = append(e.res.Notes, fmt.Sprintf(format, args...))
}

func (e *engine) fig(name string, conf float64, format string, args ...any) {
	e.res.Policy.Evidence[name] = Figure{Confidence: clamp01(conf), Evidence: fmt.Sprintf(format, args...)}
}

func clamp01(v float64) float64 { return max(0, min(1, v)) }

// Run probes the target and infers its policy. An unreachable target is
// an error with exit code 3; a target that never denies within the
// budget, or answers mostly errors, is a Result with Found false.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Target == nil {
		return nil, exitcode.Errorf(exitcode.Usage, "discover: no target")
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = DefaultMaxDuration
	}
	if o.MaxIdentities <= 0 {
		o.MaxIdentities = DefaultMaxIdentities
	}
	if o.Budget < 20 {
		return nil, exitcode.Errorf(exitcode.Usage, "discover: a budget of %d requests per identity is too small to find anything (at least 20)", o.Budget)
	}
	if p, ok := o.Target.(traffic.Prober); ok {
		if err := p.Probe(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, exitcode.With(fmt.Errorf("discover: %w", err), exitcode.Unreachable)
		}
	}
	e := newEngine(o)
	rctx, cancel := context.WithDeadline(ctx, e.deadline.Add(5*time.Second))
	defer cancel()
	err := e.run(rctx)
	counts := e.p.counted()
	e.res.PerIdentity = counts
	for _, c := range counts {
		e.res.Requests += c
	}
	e.res.DurationMS = time.Since(e.start).Milliseconds()
	e.res.Policy.HeaderForms = e.p.forms.Names()
	if e.res.Policy.HeaderForms == nil {
		e.res.Policy.HeaderForms = []string{}
	}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return e.res, ctx.Err()
	case errors.Is(err, ErrTargetErrors):
		e.res.Found = false
		e.res.Policy.Algorithm = Undetermined
		e.res.Summary = fmt.Sprintf("no limit found: %v", err)
		if st, n := e.p.commonStatus(); n > 0 {
			// nginx's limit_req denies with 503 unless told otherwise.
			e.note("%d answers were %d: if that status means denied here, name it as a denied status (rlctl discover --denied-status %d)", n, st, st)
		}
	case errors.Is(err, errBudget), errors.Is(err, errIdentities), errors.Is(err, context.DeadlineExceeded):
		e.note("the run stopped early (%v): figures not yet measured are absent", err)
	default:
		return e.res, err
	}
	if e.res.Summary == "" {
		e.res.Summary = e.summary()
	}
	return e.res, nil
}

// newEngine is a run's engine on o (its defaults applied), its clock
// started.
func newEngine(o Options) *engine {
	e := &engine{p: newProber(o.Target, o.Budget, o.MaxIdentities, o.IDPrefix), o: o, start: time.Now()}
	e.deadline = e.start.Add(o.MaxDuration)
	e.res = &Result{URLs: o.Target.Gateways(), Budget: o.Budget, Policy: Policy{Evidence: map[string]Figure{}}}
	return e
}

// summary is the policy in one line.
func (e *engine) summary() string {
	p := e.res.Policy
	switch p.Algorithm {
	case FixedWindow, SlidingWindow, SlidingLog:
		if p.WindowMS > 0 {
			return fmt.Sprintf("%s: %d per %v", p.Algorithm, p.Limit, p.Window())
		}
		return fmt.Sprintf("%s: %d per a window not measured", p.Algorithm, p.Limit)
	case TokenBucket, LeakyBucket:
		return fmt.Sprintf("%s: %.4g/s, burst %.4g", p.Algorithm, p.RatePerS, p.Burst)
	case Concurrency:
		return fmt.Sprintf("concurrency: about %d in flight", p.Limit)
	}
	return fmt.Sprintf("%s: %s", p.Algorithm, p.Evidence["algorithm"].Evidence)
}
