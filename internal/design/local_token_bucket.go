package design

import (
	"fmt"
	"time"
)

// LocalTokenBucket keeps a token bucket per identity in each gateway's
// memory.
const LocalTokenBucket = "local-token-bucket"

var localTokenBucket = Design{
	Name:    LocalTokenBucket,
	Summary: "a token bucket in each gateway's memory: N gateways, N buckets",
	State:   StateLocal,
	Clock:   Clock{Fixed: ClockGateway},
	Theory: func(p Params) Theory {
		L, N, C := p.count(), p.gateways(), p.capacity()
		t := Theory{Bounded: true, Aligned: N * (C + L - 1)}
		t.Ceiling = t.Aligned
		t.Why = fmt.Sprintf("%d independent buckets, each up to its capacity (%g) plus the L−1 whole tokens it refills within W", int(N), C)
		t.WorstSpan = refillSpan(p)
		t.Worst = fmt.Sprintf("each of %d buckets' capacity %g at once, then the L−1 tokens each refills over the next %s", int(N), C, t.WorstSpan)
		t.Atomic = "per gateway only: the bucket is not shared"
		t.Clock = "each gateway's own clock"
		return t
	},
	Envelope: bucketEnvelope,
	Span: func(p Params, _ Theory, span time.Duration) float64 {
		return p.gateways() * (p.capacity() + spanRefill(p, span))
	},
	Counter: NoCounter,
	Note:    NoteBucket,
}
