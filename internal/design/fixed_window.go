package design

// RedisFixedWindow checks and increments in one Lua script; the TTL is set
// once when the window opens.
const RedisFixedWindow = "redis-fixed-window"

var redisFixedWindow = Design{
	Name:    RedisFixedWindow,
	Summary: "one Lua script checks and increments atomically; the TTL is set once when the window opens, and re-asserted if missing",
	State:   StateRedis,
	// The window is a key's expiry: Redis's clock alone.
	Clock: Clock{Fixed: ClockRedis},
	Keys: Keys{
		Tag: "fw", Value: ValueCounter, TTL: TTL{Windows: 1},
		Layout: "rl:fw:{id} string counter; TTL W set once when the window opens",
	},
	Theory: func(p Params) Theory {
		L := p.count()
		return Theory{
			Bounded: true, Aligned: L, Ceiling: 2 * L,
			Why:    "one atomic counter per window: L per aligned window, but L at the end of one window and L at the start of the next are 2L within W",
			Worst:  boundaryBurst(p),
			Atomic: "yes: one Lua script",
			Clock:  "Redis expiry (one clock)",
		}
	},
	Envelope: WindowEnvelope,
	Counter:  StringCounter,
	Accepts:  Options{Replicate: true},
}
