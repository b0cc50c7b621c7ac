package limiter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/hotpath"
)

// DefaultReplicateTimeout is WAIT's timeout when Config.ReplicateTimeout
// is 0: half the default policy timeout, so WAIT answers before the
// policy gives up.
const DefaultReplicateTimeout = DefaultTimeout / 2

// ErrNotReplicated is an admission whose write fewer replicas acknowledged
// than Config.Replicate asks, within the timeout: the primary counted it,
// but a failover now could promote a replica without it.
var ErrNotReplicated = errors.New("write not acknowledged by enough replicas")

// Replicates reports whether algorithm can wait for replicas, as its
// design says: the Lua designs, whose one script per decision is one write
// to acknowledge.
func Replicates(algorithm string) bool {
	d, ok := design.Lookup(algorithm)
	return ok && d.Accepts.Replicate
}

func (cfg Config) validateReplicate() error {
	switch {
	case cfg.Replicate < 0:
		return fmt.Errorf("%s: replicate %d must not be negative", cfg.Algorithm, cfg.Replicate)
	case cfg.Replicate == 0:
		return nil
	case !Replicates(cfg.Algorithm):
		return fmt.Errorf("%s: replicate applies to the Lua designs (one script, one write per decision), not %s", cfg.Algorithm, cfg.Algorithm)
	case cfg.ReplicateTimeout < 0 || cfg.ReplicateTimeout%time.Millisecond != 0:
		return fmt.Errorf("%s: replicate timeout %v must be a whole number of milliseconds", cfg.Algorithm, cfg.ReplicateTimeout)
	}
	return nil
}

// replicateTimeout is cfg's WAIT timeout, the default filled in.
func (cfg Config) replicateTimeout() time.Duration {
	if cfg.ReplicateTimeout > 0 {
		return cfg.ReplicateTimeout
	}
	return DefaultReplicateTimeout
}

// replicated turns a script's reply and WAIT's count into the decision:
// an admission acknowledged by too few replicas is ErrNotReplicated.
func (s *scriptLimiter) replicated(r []int64, acked int64, id string) (Decision, error) {
	d, err := scriptDecision(r)
	if err != nil || !d.Allowed || acked >= int64(s.replicas) {
		return d, err
	}
	return Decision{}, fmt.Errorf("%s for %q: WAIT %d answered %d within %v: %w", s.algo, id, s.replicas, acked, s.waitFor, ErrNotReplicated)
}

// allowPoolWait is allowPool with WAIT pipelined after the script.
func (s *scriptLimiter) allowPoolWait(ctx context.Context, id string, cost int64, deadline time.Time) (Decision, error) {
	var a hotpath.Args
	s.args(&a, id, cost)
	var buf [5]int64
	r, acked, err := s.pool.EvalIntsWait(ctx, deadline, s.script.hot, &a, buf[:0], s.replicas, s.waitFor)
	if err != nil {
		return Decision{}, fmt.Errorf("%s script for %q: %w", s.algo, id, err)
	}
	return s.replicated(r, acked, id)
}

// allowWait is the go-redis path with WAIT: a pipeline on one connection
// (on a Cluster, to the primary that owns the identity's slot, since a
// keyless WAIT would go to any node).
func (s *scriptLimiter) allowWait(ctx context.Context, id string, cost int64) (Decision, error) {
	var a hotpath.Args
	s.args(&a, id, cost)
	keys, argv := a.Values()
	var c redis.Cmdable = s.client
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return Decision{}, fmt.Errorf("%s script for %q: find its primary: %w", s.algo, id, err)
		}
		c = node
	}
	run := func(sha bool) (ev, w *redis.Cmd) {
		pipe := c.Pipeline()
		if sha {
			ev = s.script.redis.EvalSha(ctx, pipe, keys, argv...)
		} else {
			ev = s.script.redis.Eval(ctx, pipe, keys, argv...)
		}
		w = pipe.Do(ctx, "WAIT", s.replicas, s.waitFor.Milliseconds())
		_, _ = pipe.Exec(ctx) // each command keeps its own error
		return ev, w
	}
	ev, w := run(true)
	if err := ev.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		ev, w = run(false)
	}
	r, err := ev.Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("%s script for %q: %w", s.algo, id, err)
	}
	acked, err := w.Int64()
	if err != nil {
		return Decision{}, fmt.Errorf("%s for %q: WAIT: %w", s.algo, id, err)
	}
	return s.replicated(r, acked, id)
}
