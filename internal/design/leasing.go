package design

import "fmt"

// Leasing spends leased slices of a Redis budget in each gateway's memory.
const Leasing = "leasing"

var leasing = Design{
	Name:    Leasing,
	Summary: "each gateway spends a leased slice of the Redis budget locally and tops up in the background; a dead gateway strands its slice",
	State:   StateLease,
	// One clock for the global budget.
	Clock: Clock{Default: ClockRedis},
	Keys: Keys{
		Tag: "lease", Windowed: true, Value: ValueBudget, TTL: TTL{Windows: 1},
		Layout: "rl:lease:{id}:<window index> string budget granted so far; TTL W",
	},
	Theory: func(p Params) Theory {
		L, N, S := p.count(), p.gateways(), p.lease()
		return Theory{
			Bounded: true, Aligned: L + S*N, Ceiling: 2*L + S*N,
			Why:    fmt.Sprintf("the budget L is handed out in slices of %g; every one of %d holders can still spend a slice it took before the window closed: L + %g×%d per window, and a fixed budget window doubles at its boundary", S, int(N), S, int(N)),
			Worst:  fmt.Sprintf("at the budget window's end: L plus the %d holders' slices spent just before it, as much again just after", int(N)),
			Atomic: "yes for grants (one Lua script); spending a slice is local",
			Clock:  "Redis expiry for the budget window; local for spending",
		}
	},
	// Leasing knowingly buys latency with an overage of one slice per
	// holder; only what exceeds that counts as slipped.
	Envelope: func(p Params) float64 { return WindowEnvelope(p) + p.lease()*p.gateways() },
	Counter:  NoCounter,
	Accepts:  Options{Lease: true},
}

// DefaultLeaseSize is the slice a leasing gateway takes when none is set:
// max(1, limit/10).
func DefaultLeaseSize(limit int64) int64 { return max(1, limit/10) }

// lease is leasing's slice S: Lease, or the design's default.
func (p Params) lease() float64 {
	if p.Lease > 0 {
		return float64(p.Lease)
	}
	return float64(DefaultLeaseSize(p.Limit.Count))
}
