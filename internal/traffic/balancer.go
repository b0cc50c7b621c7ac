package traffic

import "github.com/rlctl/rlctl/internal/gateway"

// Balancer picks the gateway for the seq-th request of an identity, like the
// load balancer in front of real gateways. When RunOptions.Balancer is nil,
// Run builds gateway.NewBalancer from Plan.Spread and Plan.Seed.
type Balancer = gateway.Balancer

// mix64 is splitmix64's finaliser: a cheap, well-spread 64-bit hash (used to
// spread hits over endpoints by share).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
