package simtarget

import (
	"context"
	"fmt"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/traffic"
)

// New returns a target that asks d directly, in-process. Closing
// the target closes d when d has a Close method.
func New(d gateway.Decider) traffic.Target { return simulated{d: d} }

type simulated struct{ d gateway.Decider }

func (s simulated) Do(ctx context.Context, r traffic.Request) traffic.Response {
	dec, err := s.d.Decide(ctx, r.Gateway, r.Endpoint, r.ID)
	if err != nil {
		return traffic.ErrResponse(fmt.Errorf("gateway %d: %w", r.Gateway, err))
	}
	return FromDecision(dec)
}

// FromDecision maps a limiter decision onto a target response.
func FromDecision(d limiter.Decision) traffic.Response {
	resp := traffic.Response{Outcome: decision.Denied, By: d.By, RetryAfter: -1, Remaining: d.Remaining,
		Reset: -1, Decided: d.ServerTime, Cause: d.Cause}
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

// Warm opens the gateways' connections when d can (gateway.Set can).
func (s simulated) Warm(ctx context.Context, conns int) error {
	if w, ok := s.d.(traffic.Warmer); ok {
		return w.Warm(ctx, conns)
	}
	return nil
}

func (s simulated) Gateways() []string  { return s.d.Names() }
func (s simulated) Endpoints() []string { return s.d.Endpoints() }

func (s simulated) Close() error {
	switch c := s.d.(type) {
	case interface{ Close() error }:
		return c.Close()
	case interface{ Close() }:
		c.Close()
	}
	return nil
}
