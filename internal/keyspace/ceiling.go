package keyspace

import (
	"fmt"

	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
)

// Ceiling is the simple theory of what a deployment really admits in one
// window, beside what it publishes. The JSON form is stable.
type Ceiling struct {
	Algorithm string `json:"algorithm"`
	Published int64  `json:"published"`
	WindowMs  int64  `json:"window_ms"`
	Gateways  int    `json:"gateways"`
	// True is the most one identity can get through in any window of
	// length W under this design, by the simple theory.
	True int64 `json:"true"`
	// Ratio is True / Published.
	Ratio float64 `json:"ratio"`
	// Why explains the figure.
	Why string `json:"why"`
}

// TrueCeiling estimates the true ceiling of a design: local designs admit
// L on every gateway, fixed windows 2L across a boundary, a token bucket
// its capacity plus a window's refill, leasing L plus a lease per gateway.
// lease is the lease size (0: the leasing default of L/10 per gateway, at
// least 1). The estimate is the design's worst case, not a measurement:
// `rlctl verify` measures.
func TrueCeiling(alg string, published rate.Limit, gateways int, lease int64) (Ceiling, error) {
	if published.Count <= 0 {
		return Ceiling{}, fmt.Errorf("true ceiling: a published limit is needed")
	}
	if gateways < 1 {
		gateways = 1
	}
	L, n := published.Count, int64(gateways)
	c := Ceiling{Algorithm: alg, Published: L, WindowMs: published.Window.Milliseconds(), Gateways: gateways}
	switch alg {
	case limiter.LocalFixedWindow:
		c.True, c.Why = 2*L*n, "each gateway counts alone (N×L) and each window admits L again right after the boundary (×2)"
	case limiter.LocalTokenBucket:
		c.True, c.Why = (2*L-1)*n, "each gateway has its own bucket: capacity L plus L refilled in W, minus one, per gateway"
	case limiter.RedisGetIncr:
		c.True, c.Why = 2*(L+n-1), "GET then INCR races: up to N-1 extra per window, and 2 windows meet at a boundary"
	case limiter.RedisFixedWindow, limiter.RedisClockWindow:
		c.True, c.Why = 2*L, "a fixed window admits L just before and L just after a boundary"
	case limiter.RedisFixedWindowRefresh:
		c.True, c.Why = L, "the TTL refresh keeps the window open while traffic continues: at most L per W, but the window never rolls (it under-admits)"
	case limiter.RedisTokenBucket:
		c.True, c.Why = 2*L-1, "a bucket of capacity L refilled at L per W admits its capacity plus a window's refill, minus one"
	case limiter.RedisGCRA:
		c.True, c.Why = 2*L-1, "GCRA is a token bucket of burst L: capacity plus a window's emission, minus one"
	case limiter.RedisSlidingWindow:
		c.True, c.Why = 2*L, "the weighted blend assumes the previous window's hits were spread evenly; bunched at its end they count little (worst case approaches 2L)"
	case limiter.RedisSlidingLog:
		c.True, c.Why = L, "an exact sliding log admits exactly L in any window of W"
	case limiter.Leasing:
		if lease <= 0 {
			lease = max(L/(10*n), 1)
		}
		c.True, c.Why = L+lease*n, fmt.Sprintf("the budget L plus one lease of %d stranded or in flight on each of %d gateways", lease, n)
	default:
		return Ceiling{}, fmt.Errorf("true ceiling: unknown algorithm %q (known: %v)", alg, limiter.Algorithms)
	}
	c.Ratio = float64(c.True) / float64(L)
	return c, nil
}
