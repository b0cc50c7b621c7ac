package traffic

import "github.com/rlctl/rlctl/internal/gateway"

// Balancer picks the gateway for the seq-th request of an identity, like the
// load balancer in front of real gateways. When RunOptions.Balancer is nil,
// Run builds gateway.NewBalancer from Plan.Spread and Plan.Seed.
type Balancer = gateway.Balancer
