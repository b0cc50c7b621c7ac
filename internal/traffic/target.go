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
	// HintPrecision is how finely the answer stated RetryAfter and Reset:
	// time.Second for whole seconds (Retry-After: 2, a Unix timestamp in
	// seconds), 0 when exact (a simulated target's own durations).
	HintPrecision time.Duration
	// Status is the HTTP status of an http target's answer, 0 for other
	// targets and for requests that got no answer.
	Status int
	// Cause, for an answer a failure policy gave in place of Redis
	// (fail-open, fail-closed, fallback), is the error it answered for.
	Cause error
	Err   error
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

// Warmer is a Target (or anything on a request's path) that can open,
// before traffic starts, the connections its requests will need, so no
// dial or handshake lands inside a measured request.
type Warmer interface {
	Warm(ctx context.Context, conns int) error
}

// Prober is a Target that can check, before a run, that it answers at all,
// so a target that never answers is reported as unreachable rather than
// measured as one that admitted nothing.
type Prober interface {
	Probe(ctx context.Context) error
}

// Form is a set of the rate-limit header families an answer carried, so a
// report can say which one the target spoke.
type Form uint8

// The header families an answer can carry (httptarget.ParseHints reads
// them).
const (
	// FormRetryAfter is Retry-After (RFC 9110), seconds or an HTTP date.
	FormRetryAfter Form = 1 << iota
	// FormDraft11 is RateLimit and RateLimit-Policy as Structured Field
	// lists of named policies, `"default";r=50;t=30` and
	// `"default";q=100;w=60` (draft-ietf-httpapi-ratelimit-headers-08 to 11).
	FormDraft11
	// FormDraft07 is the single RateLimit dictionary
	// `limit=100, remaining=50, reset=5` (draft 07).
	FormDraft07
	// FormDraft06 is RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset, with RateLimit-Policy `100;w=60` (drafts 03 to 06).
	FormDraft06
	// FormXRateLimit is the legacy X-RateLimit-* (or X-Rate-Limit-*)
	// family.
	FormXRateLimit
)

var formNames = [...]string{"retry-after", "draft-11", "draft-07", "draft-06", "x-ratelimit"}

// Names lists the families in f, most current first, as report.json and
// history files spell them: retry-after, draft-11, draft-07, draft-06,
// x-ratelimit.
func (f Form) Names() []string {
	var out []string
	for i, n := range formNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// ParseForms is the inverse of Form.Names; unknown names are ignored, so a
// history written by a later rlctl still reads.
func ParseForms(names []string) Form {
	var f Form
	for _, n := range names {
		for i, k := range formNames {
			if n == k {
				f |= 1 << i
			}
		}
	}
	return f
}
