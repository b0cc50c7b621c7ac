package workload

import (
	"fmt"
	"math/bits"
)

// Balancer decides which gateway gets an identity's seq-th request (seq
// counts from 0 per identity), as the load balancer in front of real
// gateways does. Implementations are pure functions of their
// arguments and safe for concurrent use, so a run is reproducible from its
// seed.
type Balancer interface {
	Pick(identity uint32, seq uint64) int
}

// NewBalancer returns the balancer for spread over gateways gateways.
//
//   - round-robin: an identity's requests visit every gateway in turn,
//     starting at a different gateway per identity.
//   - random: each request goes to a gateway drawn uniformly from a hash of
//     (seed, identity, seq): random-looking, yet the same seed gives the
//     same run.
//   - sticky: every request of an identity goes to one gateway chosen by a
//     hash of (seed, identity), like consistent hashing on a client key.
func NewBalancer(spread string, gateways int, seed int64) (Balancer, error) {
	if gateways <= 0 {
		return nil, fmt.Errorf("balancer: %d gateways, want at least 1", gateways)
	}
	n := uint64(gateways)
	switch spread {
	case SpreadRoundRobin, "":
		return roundRobin{n: n}, nil
	case SpreadRandom:
		return random{n: n, seed: uint64(seed)}, nil
	case SpreadSticky:
		return sticky{n: n, seed: uint64(seed)}, nil
	}
	return nil, fmt.Errorf("balancer: spread %q (want round-robin, random or sticky)", spread)
}

type roundRobin struct{ n uint64 }

func (b roundRobin) Pick(identity uint32, seq uint64) int {
	return int((uint64(identity) + seq) % b.n)
}

type random struct{ n, seed uint64 }

func (b random) Pick(identity uint32, seq uint64) int {
	h := Mix(b.seed ^ Mix(uint64(identity)+0x9e3779b97f4a7c15) ^ Mix(seq+0x632be59bd9b4e019))
	return int(bounded(h, b.n))
}

type sticky struct{ n, seed uint64 }

func (b sticky) Pick(identity uint32, _ uint64) int {
	return int(bounded(Mix(b.seed^Mix(uint64(identity)+0x9e3779b97f4a7c15)), b.n))
}

// Mix is splitmix64's finaliser: a cheap, well-spread 64-bit hash, shared
// by the balancers and the traffic engine's endpoint spread.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// bounded maps h onto [0, n) without the bias of a plain modulo worth
// noticing: the high 64 bits of h*n (Lemire's multiply-shift).
func bounded(h, n uint64) uint64 {
	hi, _ := bits.Mul64(h, n)
	return hi
}
