package design

import "fmt"

// RedisGetIncr reads, compares and increments in separate round trips:
// the check-then-increment race.
const RedisGetIncr = "redis-get-incr"

var redisGetIncr = Design{
	Name:    RedisGetIncr,
	Summary: "GET, compare, then INCR (EXPIRE on the first) in separate round trips: the check-then-increment race",
	State:   StateRedis,
	// The window is a key's expiry: Redis's clock alone.
	Clock: Clock{Fixed: ClockRedis},
	Keys: Keys{
		Tag: "gi", Value: ValueCounter, TTL: TTL{Windows: 1},
		Layout: "rl:gi:{id} string counter; EXPIRE W on the first INCR",
	},
	Theory: func(p Params) Theory {
		L, N := p.count(), p.gateways()
		t := Theory{Aligned: L + N - 1}
		t.Ceiling = 2 * t.Aligned
		t.Why = fmt.Sprintf("GET, compare and INCR are separate round trips: every request in flight between another's read and write passes at L−1; with one request in flight per gateway that is L+%d per window, and more in flight means more", int(N)-1)
		t.Worst = "at one window boundary: L+N−1 just before it and as many just after, more with more requests in flight"
		t.Atomic = "no: GET then INCR leaves a gap between the read and the write"
		t.Clock = "Redis expiry (one clock)"
		return t
	},
	Envelope: WindowEnvelope,
	Counter:  StringCounter,
	Accepts:  Options{Pause: true},
}
