package design

// RedisFixedWindowRefresh is the TTL bug on purpose: the expiry is pushed
// out on every request.
const RedisFixedWindowRefresh = "redis-fixed-window-refresh"

var redisFixedWindowRefresh = Design{
	Name:    RedisFixedWindowRefresh,
	Summary: "the TTL bug: the expiry is refreshed on every request, so the window never rolls while traffic continues",
	State:   StateRedis,
	// The window is a key's expiry: Redis's clock alone.
	Clock: Clock{Fixed: ClockRedis},
	Keys: Keys{
		Tag: "fwr", Value: ValueCounter, TTL: TTL{Windows: 1},
		Layout: "rl:fwr:{id} string counter; TTL W pushed out on every request (the bug)",
	},
	Theory: func(p Params) Theory {
		L := p.count()
		return Theory{
			Bounded: true, Aligned: L, Ceiling: L,
			Why:    "the expiry is refreshed on every request, so under continuous traffic the window never rolls: at most L — and a busy caller stays locked out until it is quiet for a whole window",
			Worst:  "L at once, then nothing while traffic continues",
			Atomic: "yes: one Lua script (but the TTL is refreshed on every request)",
			Clock:  "Redis expiry, pushed forward by every request",
		}
	},
	Envelope: WindowEnvelope,
	Counter:  StringCounter,
	Accepts:  Options{Replicate: true},
	Note:     NoteTTLRefresh,
}
