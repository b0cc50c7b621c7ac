package redisconn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// ConnectBounded is Connect for tools that make many calls (keys, audit):
// every command or pipeline through the client, and through each Cluster
// node's own client, gives up after the configured timeout, go-redis's
// retries included. A Redis that stalls mid-command is then reported
// within its timeout, never waited on for several.
func (c *Config) ConnectBounded(ctx context.Context) (redis.UniversalClient, error) {
	client := c.NewClient()
	bound := callBound(c.timeout)
	client.AddHook(bound)
	if cc, ok := client.(*redis.ClusterClient); ok {
		// Per-node work (SCAN on each primary) goes through clients
		// made as the Cluster's nodes are found, after this.
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(bound) })
	}
	if err := c.Check(ctx, client); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// callBound is a go-redis hook that gives each command or pipeline at most
// its duration, retries included. go-redis retries a call that timed out,
// up to three more times by default, so a stalled Redis would otherwise hold one
// call for several timeouts.
type callBound time.Duration

func (b callBound) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= time.Duration(b) {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Duration(b))
}

// DialHook leaves dialing to DialTimeout.
func (b callBound) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook bounds one command.
func (b callBound) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, cancel := b.bound(ctx)
		defer cancel()
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook bounds one pipeline as a whole.
func (b callBound) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		ctx, cancel := b.bound(ctx)
		defer cancel()
		return next(ctx, cmds)
	}
}

// OpError describes an error from an operation of several calls (what):
// interruption and an error that already carries its exit code stay
// themselves; a reply from Redis is a plain failure with passwords
// removed, except a refusal for want of an ACL permission (NOPERM) or of
// memory (OOM), which means Redis could not be used (exitcode.Unreachable)
// and says so; anything else means Redis could not be reached (ConnError,
// exitcode.Unreachable).
func (c *Config) OpError(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var coded exitcode.Coder
	if errors.Is(err, context.Canceled) || ctx.Err() != nil || errors.As(err, &coded) {
		return err
	}
	var re redis.Error
	if errors.As(err, &re) {
		switch k := Classify(err); k {
		case "permission denied":
			return exitcode.With(fmt.Errorf("%s: %s: the Redis user lacks an ACL permission this needs: %w", what, k, c.RedactError(err)), exitcode.Unreachable)
		case classOOM:
			return exitcode.With(fmt.Errorf("%s: %s: %w", what, k, c.RedactError(err)), exitcode.Unreachable)
		}
		return fmt.Errorf("%s: %w", what, c.RedactError(err))
	}
	return c.ConnError(ctx, what, err)
}
