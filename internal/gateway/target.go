package gateway

import (
	"context"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/traffic"
)

var _ traffic.Target = (*Set)(nil)

// Do implements traffic.Target: one request through r.Gateway and
// r.Endpoint for r.ID.
func (s *Set) Do(ctx context.Context, r traffic.Request) traffic.Response {
	d, err := s.Decide(ctx, r.Gateway, r.Endpoint, r.ID)
	if err != nil {
		return traffic.Response{Outcome: decision.Error, RetryAfter: -1, Remaining: -1, Reset: -1, Err: err}
	}
	resp := traffic.Response{
		Outcome:    decision.Denied,
		By:         d.By,
		RetryAfter: -1,
		Remaining:  d.Remaining,
		Reset:      -1,
		Decided:    d.ServerTime,
	}
	if d.Allowed {
		resp.Outcome = decision.Allowed
	} else if d.RetryAfter > 0 {
		resp.RetryAfter = d.RetryAfter
	}
	if d.Reset > 0 {
		resp.Reset = d.Reset
	}
	return resp
}

// Gateways implements traffic.Target.
func (s *Set) Gateways() []string { return s.Names() }
