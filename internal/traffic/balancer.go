package traffic

import "fmt"

// Balancer picks the gateway for the seq-th request of an identity, like the
// load balancer in front of real gateways. The gateway package has the full
// one (gateway.NewBalancer); Plan.Spread builds a small one here when the
// caller passes none. Implementations must be safe for concurrent use.
type Balancer interface {
	Pick(identity uint32, seq uint64) int
}

// newBalancer returns the spread's balancer over gateways gateways.
func newBalancer(spread string, gateways int, seed int64) (Balancer, error) {
	if gateways <= 0 {
		return nil, fmt.Errorf("balancer: %d gateways", gateways)
	}
	switch spread {
	case SpreadRoundRobin, "":
		return roundRobin{n: uint64(gateways)}, nil
	case SpreadRandom:
		return hashed{n: uint64(gateways), seed: uint64(seed), perRequest: true}, nil
	case SpreadSticky:
		return hashed{n: uint64(gateways), seed: uint64(seed)}, nil
	}
	return nil, fmt.Errorf("balancer: unknown spread %q", spread)
}

// roundRobin sends an identity's requests to each gateway in turn, starting
// at a gateway that depends on the identity so identities do not march in
// step.
type roundRobin struct{ n uint64 }

func (r roundRobin) Pick(identity uint32, seq uint64) int {
	return int((uint64(identity) + seq) % r.n)
}

// hashed picks by a hash: of identity and seq (random, but reproducible from
// the seed and free of shared state) or of identity alone (sticky).
type hashed struct {
	n, seed    uint64
	perRequest bool
}

func (h hashed) Pick(identity uint32, seq uint64) int {
	x := h.seed ^ uint64(identity)*0x9e3779b97f4a7c15
	if h.perRequest {
		x ^= mix64(seq + 0x632be59bd9b4e019)
	}
	return int(mix64(x) % h.n)
}

// mix64 is splitmix64's finaliser: a cheap, well-spread 64-bit hash.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
