package design

// RedisSlidingLog is the exact sliding log: one sorted-set member per
// admitted request.
const RedisSlidingLog = "redis-sliding-log"

var redisSlidingLog = Design{
	Name:    RedisSlidingLog,
	Summary: "an exact sliding log in a sorted set: never more than L in any window; memory grows with traffic",
	State:   StateRedis,
	Clock:   Clock{Default: ClockGateway},
	Keys: Keys{
		Tag: "sl", Value: ValueLog, TTL: TTL{Windows: 1},
		Layout: "rl:sl:{id} sorted set, one member per request, score = ms; TTL W",
	},
	Theory: func(p Params) Theory {
		L := p.count()
		return Theory{
			Bounded: true, Aligned: L, Ceiling: L,
			Why:    "an exact log of every admitted request: never more than L in any span of W (memory grows with traffic)",
			Worst:  "L at once, then none until the first of them is W old",
			Atomic: "yes: one Lua script",
			Clock:  "Redis TIME or the caller's clock",
		}
	},
	// An exact log never admits more than L in any span of W.
	Envelope: func(p Params) float64 { return p.count() },
	Counter:  LogCounter,
	Accepts:  Options{Replicate: true},
}
