package design

import (
	"fmt"
	"time"
)

// RedisSlidingWindow blends the current and previous windows' counters.
const RedisSlidingWindow = "redis-sliding-window"

var redisSlidingWindow = Design{
	Name:    RedisSlidingWindow,
	Summary: "a sliding-window counter: the current and previous windows' counts, blended by weight",
	State:   StateRedis,
	Clock:   Clock{Default: ClockGateway},
	Keys: Keys{
		Tag: "sw", Windowed: true, Previous: true, Value: ValueCounter, TTL: TTL{Windows: 2},
		Layout: "rl:sw:{id}:<window index> string counters (current and previous); TTL 2W",
	},
	Theory: func(p Params) Theory {
		L := p.count()
		t := Theory{Bounded: true, Aligned: L, Ceiling: 2*L - 1}
		t.Why = "the weighted estimate assumes the previous window's requests were spread evenly; when they bunched at its end, a sliding span of W can hold up to 2L−1"
		t.WorstSpan = slidingSpan(p)
		t.Worst = fmt.Sprintf("L bunched at the end of one window, then L−1 as the blend lets them in over the next %s", t.WorstSpan)
		t.Atomic = "yes: one Lua script"
		t.Clock = "Redis TIME or the caller's clock"
		return t
	},
	Envelope: WindowEnvelope,
	Span: func(p Params, t Theory, span time.Duration) float64 {
		// L bunched at the end of the previous window, then the blend lets
		// the new window admit in proportion to its elapsed part.
		return min(t.Ceiling, p.count()+spanRefill(p, span)+1)
	},
	Counter: StringCounter,
	Accepts: Options{Replicate: true},
}

// slidingSpan is how far into the next window the sliding-window counter
// lets the L−1 in after L bunched at the end of the previous one: it
// admits while the new count is below L×(elapsed/W), so the (L−1)th gets
// in once (L−2)/L of W has passed.
func slidingSpan(p Params) time.Duration {
	L := p.Limit.Count
	return time.Duration(float64(p.Limit.Window) * float64(max(L-2, 0)) / float64(L)).Round(time.Millisecond)
}
