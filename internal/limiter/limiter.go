package limiter

import (
	"context"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
)

// Decision is one limiter answer.
type Decision struct {
	Allowed bool
	// Remaining is what the limiter says is left after this request in its
	// own terms (requests left in the window, whole tokens left), or -1 when
	// the design cannot say. Example: a fixed window of 100 that has counted
	// 87 including this request reports 13.
	Remaining int64
	// RetryAfter is how long a denied caller should wait before the next
	// request can succeed; 0 when allowed.
	RetryAfter time.Duration
	// Reset is how long until the limiter is back to its full allowance
	// (window end, bucket full), or 0 when unknown.
	Reset time.Duration
	// By says which path decided (redis, local, fail-open, ...).
	By decision.By
	// ServerTime is Redis TIME when the script read it, else zero.
	ServerTime time.Time
	// Cause is the error a failure policy decided in place of Redis (By
	// fail-open, fail-closed or fallback), nil when Redis decided.
	Cause error
}

// Limiter decides whether one identity may spend cost now.
//
// Implementations are safe for concurrent use. A returned error means no
// decision was reached (the failure policy wrapper turns errors into
// decisions); Decision is then meaningless.
type Limiter interface {
	Allow(ctx context.Context, id string, cost int64) (Decision, error)
}

// Warmer is anything on a request's path that can open, before traffic
// starts, the connections it will use (and load what it runs), as one that
// has served for a while has them open: a limiter, a set of gateways, a
// traffic target. A dial inside a measured request is rlctl's cost, not
// the target's, and under a burst one slow dial holds requests up, which
// then open more.
type Warmer interface {
	// Warm opens up to conns connections per gateway (fewer when a pool is
	// smaller) and returns the first error.
	Warm(ctx context.Context, conns int) error
}

// Clock is a gateway's notion of now. Skewed gateways have skewed clocks.
type Clock func() time.Time

// Config selects and parameterises one algorithm.
type Config struct {
	// Algorithm is a design's name (package design registers them).
	Algorithm string
	Limit     rate.Limit // L per W
	// Capacity is a token bucket's (or GCRA's) burst; 0 means Limit.Count.
	Capacity int64
	// Prefix starts every key ("rl:" by default).
	Prefix string
	// Clock is "gateway" (the caller's Clock, possibly skewed) or "redis"
	// (TIME inside the script). Empty means the design's natural default.
	Clock string
	// Pause is redis-get-incr's gap between its read and its write, so the
	// race shows on demand.
	Pause time.Duration
	Lease LeaseConfig
	// Replicate, when > 0, makes a Lua design's decision wait for that many
	// replicas to acknowledge its write before an admission stands: WAIT
	// Replicate ReplicateTimeout follows the EVALSHA on the same
	// connection. An admission acknowledged by fewer is ErrNotReplicated,
	// which the endpoint's on_error policy turns into a decision; a denial
	// stands, since refusing needs no durable count.
	Replicate int
	// ReplicateTimeout is WAIT's timeout, whole milliseconds; 0 means
	// DefaultReplicateTimeout. It must be shorter than the policy timeout,
	// or the policy gives up before WAIT answers.
	ReplicateTimeout time.Duration
}

// LeaseConfig parameterises the leasing design.
type LeaseConfig struct {
	Size        int64   // slice granted per top-up; 0 = fixed default
	RefillBelow float64 // top up when this fraction of the slice is left (default 0.2)
	Adaptive    bool    // size slices by recent demand
	// Timeout bounds one asynchronous top-up (default 1s). A request that
	// has nothing left waits for its own grant under its own context.
	Timeout time.Duration
}
