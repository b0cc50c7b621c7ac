package traffic

import (
	"context"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
)

// Request is one request the engine asks a target to make.
type Request struct {
	Identity uint32 // index of the identity
	ID       string // the identity itself ("user-3")
	Gateway  int    // which gateway (index into Target.Gateways)
	Endpoint int    // which endpoint (index into the target's endpoints)
}

// Response is what a target answered. Err set means Outcome is decision.Error.
type Response struct {
	Outcome decision.Outcome
	By      decision.By
	// RetryAfter from the answer, or -1 when the answer carried none.
	RetryAfter time.Duration
	// Remaining as the target reported it, or -1.
	Remaining int64
	// Reset as the target reported it, or -1.
	Reset time.Duration
	// Decided is the target's own decision time (e.g. Redis TIME), or zero.
	Decided time.Time
	// Form says which rate-limit header families the answer carried (http
	// targets only).
	Form Form
	Err  error
}

// ErrResponse is the Response of a request that got no answer: err says
// why, and no hint (retry-after, remaining, reset) came back.
func ErrResponse(err error) Response {
	return Response{Outcome: decision.Error, RetryAfter: -1, Remaining: -1, Reset: -1, Err: err}
}

// Target makes requests. Do is called from many goroutines at once and must
// return by the context's deadline.
type Target interface {
	Do(ctx context.Context, r Request) Response
	// Gateways names the gateways requests can go through.
	Gateways() []string
	// Endpoints names the endpoints (at least one).
	Endpoints() []string
	Close() error
}

// Warmer is a Target that can open its connections before a run starts, as
// gateways that have served for a while have them open: a dial inside a
// measured request is rlctl's cost, not the target's, and under a burst one
// slow dial holds requests up, which then open more.
type Warmer interface {
	// Warm opens up to conns connections per gateway (fewer when a pool is
	// smaller) and returns the first error.
	Warm(ctx context.Context, conns int) error
}

// Prober is a Target that can check, before a run, that it answers at all,
// so a target that never answers is reported as unreachable rather than
// measured as one that admitted nothing.
type Prober interface {
	Probe(ctx context.Context) error
}
