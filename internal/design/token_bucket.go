package design

import (
	"fmt"
	"time"
)

// RedisTokenBucket is one shared token bucket per identity in a Redis
// hash, decided by one Lua script.
const RedisTokenBucket = "redis-token-bucket"

var redisTokenBucket = Design{
	Name:    RedisTokenBucket,
	Summary: "a shared token bucket (a hash of tokens and timestamp) in one Lua script",
	State:   StateRedis,
	Clock:   Clock{Default: ClockGateway},
	Keys: Keys{
		Tag: "tb", Value: ValueBucket, TTL: TTL{UntilFull: true},
		Layout: "rl:tb:{id} hash {tokens (float), ts (ms)}",
	},
	Theory: func(p Params) Theory {
		L, C := p.count(), p.capacity()
		t := Theory{Bounded: true, Aligned: C + L - 1}
		t.Ceiling = t.Aligned
		t.Why = fmt.Sprintf("one shared bucket: capacity %g plus the L−1 whole tokens refilled within W; that is its envelope, not a leak", C)
		t.WorstSpan = refillSpan(p)
		t.Worst = fmt.Sprintf("the capacity %g at once, then the L−1 tokens refilled over the next %s", C, t.WorstSpan)
		if skew := skewRefill(p); skew > 0 {
			// The script stores each caller's stamp as the last refill,
			// even one behind the stored stamp: a gateway behind sets it
			// back, and the next one ahead refills that time again.
			t.Aligned += skew
			t.Ceiling = t.Aligned
			t.Bounded = false
			t.Why = fmt.Sprintf("one shared bucket, refilled by each gateway's clock: with clocks %s apart, every time a gateway that runs ahead follows one that runs behind, the bucket refills up to %s of tokens (%.1f) that nobody waited for, so the ceiling grows with how often they alternate, up to the offered rate; at least capacity %g plus the L−1 tokens refilled within W plus %.1f", p.Skew, p.Skew, skew/2, C, skew)
			// the extra refills come as gateways alternate
			t.WorstSpan = p.Limit.Window
			t.Worst = "more each time a gateway that runs ahead follows one that runs behind, within W"
		}
		t.Atomic = "yes: one Lua script"
		t.Clock = "the caller's clock (clock: gateway) or Redis TIME (clock: redis); with gateway clocks a request stamped before another but run after it sets the last refill back, and that gap is refilled twice"
		return t
	},
	Envelope: bucketEnvelope,
	Span: func(p Params, _ Theory, span time.Duration) float64 {
		return p.capacity() + spanRefill(p, span) + skewRefill(p)
	},
	Counter: NoCounter,
	Accepts: Options{Replicate: true},
	Note:    NoteBucket,
}
