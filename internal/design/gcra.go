package design

import (
	"fmt"
	"time"
)

// RedisGCRA is the generic cell rate algorithm: one TAT per identity.
const RedisGCRA = "redis-gcra"

var redisGCRA = Design{
	Name:    RedisGCRA,
	Summary: "GCRA, the leaky bucket as a meter: one value (the theoretical arrival time) per identity",
	State:   StateRedis,
	// Redis TIME by default, as go-redis/redis_rate does.
	Clock: Clock{Default: ClockRedis},
	Keys: Keys{
		Tag: "gcra", Value: ValueTAT, TTL: TTL{UntilFull: true},
		Layout: "rl:gcra:{id} string TAT (theoretical arrival time, ms)",
	},
	Theory: func(p Params) Theory {
		L, C := p.count(), p.capacity()
		t := Theory{Bounded: true, Aligned: C + L - 1}
		t.Ceiling = t.Aligned
		t.Why = fmt.Sprintf("GCRA is a token bucket measured in time: burst %g plus one emission per W/L", C)
		t.WorstSpan = refillSpan(p)
		t.Worst = fmt.Sprintf("the burst %g at once, then L−1 emissions over the next %s", C, t.WorstSpan)
		t.Atomic = "yes: one Lua script"
		t.Clock = "Redis TIME inside the script"
		return t
	},
	Envelope: bucketEnvelope,
	Span: func(p Params, _ Theory, span time.Duration) float64 {
		return p.capacity() + spanRefill(p, span)
	},
	Counter: NoCounter,
	Accepts: Options{Replicate: true},
	Note:    NoteBucket,
}
