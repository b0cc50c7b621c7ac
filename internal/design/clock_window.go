package design

import (
	"fmt"
	"time"
)

// RedisClockWindow keys each window by an id computed from a clock.
const RedisClockWindow = "redis-clock-window"

var redisClockWindow = Design{
	Name:    RedisClockWindow,
	Summary: "a key per window id built from a clock ({prefix}{id}:{floor(now/W)}); target.clock says whose",
	State:   StateRedis,
	Clock:   Clock{Default: ClockGateway},
	Keys: Keys{
		Tag: "cw", Windowed: true, Value: ValueCounter, TTL: TTL{Windows: 1},
		Layout: "rl:cw:{id}:<floor(now_ms/W_ms)> string counter; TTL W",
	},
	Theory: func(p Params) Theory {
		L := p.count()
		t := Theory{
			Bounded: true, Aligned: L, Ceiling: 2 * L,
			Why:    "a key per clock window: L per window, 2L across a boundary",
			Worst:  boundaryBurst(p),
			Atomic: "yes: one Lua script",
			Clock:  "Redis TIME inside the script (clock: redis) or each gateway's clock (clock: gateway)",
		}
		if p.Skew > 0 {
			t.Ceiling = 3 * L
			t.Why = fmt.Sprintf("gateway clocks up to %s apart put the same instant in different windows: a span of W touches three windows' keys, up to 3L (with clock: redis, 2L)", p.Skew)
			// L of one window just before the slowest clock leaves it,
			// L of the next, and L of the one after from when the fastest
			// clock enters it: 2×skew less than W apart.
			t.WorstSpan = max(p.Limit.Window-2*p.Skew, 0)
			t.Worst = fmt.Sprintf("L of three windows' keys each, from just before the slowest clock leaves the first to just after the fastest enters the third: %s apart", t.WorstSpan)
			t.Clock = "each gateway's own clock (skewed)"
		}
		return t
	},
	Envelope: WindowEnvelope,
	Span: func(p Params, t Theory, span time.Duration) float64 {
		if span <= t.WorstSpan {
			// skewed clocks' third window is out of reach: a boundary's 2L
			return 2 * p.count()
		}
		return t.Ceiling
	},
	Counter: StringCounter,
	Accepts: Options{Replicate: true},
}
