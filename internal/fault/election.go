package fault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Election is what a watch saw of a primary changing hands, on the wall
// clock. A zero time was not seen before the watch ended.
type Election struct {
	// Stopped is when the old primary first refused or failed a write. A
	// graceful Sentinel failover leaves it taking writes for seconds after
	// the promotion (until Sentinel turns it into a replica), so it may
	// come after Answered, or not at all.
	Stopped time.Time
	// Answered is when a write made the way the gateways make theirs first
	// landed on the new primary.
	Answered time.Time
}

// Probe writes to one node and reports whether it took the write.
type Probe func(ctx context.Context) error

// Watch is what WatchElection probes.
type Watch struct {
	// Old writes straight to the old primary; nil when it is known to have
	// stopped (the caller records when).
	Old Probe
	// Via writes token the way the gateways write (Sentinel discovery,
	// Cluster redirects, the fault proxy).
	Via func(ctx context.Context, token string) error
	// Landed reports whether token is on a node that is now a primary, and
	// not the old one.
	Landed func(ctx context.Context, token string) bool
}

// probeTimeout bounds one probe, so a hung node reads as a failure, not
// as a stalled watch.
const probeTimeout = 100 * time.Millisecond

// bounded runs probe f within probeTimeout of ctx.
func bounded[T any](ctx context.Context, f func(context.Context) T) T {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return f(pctx)
}

// WatchElection probes every period until a write made through w.Via
// lands on a new primary, or until ctx ends (so bound ctx), and records
// when the old primary first failed a write on the way.
func WatchElection(ctx context.Context, w Watch, period time.Duration) Election {
	var e Election
	tick := time.NewTicker(period)
	defer tick.Stop()
	for n := 0; ; n++ {
		now := time.Now()
		if e.Stopped.IsZero() && w.Old != nil && bounded(ctx, w.Old) != nil {
			e.Stopped = now
		}
		token := strconv.Itoa(n)
		if bounded(ctx, func(ctx context.Context) bool { return w.Via(ctx, token) == nil && w.Landed(ctx, token) }) {
			e.Answered = time.Now()
			return e
		}
		select {
		case <-ctx.Done():
			return e
		case <-tick.C:
		}
	}
}

// WatchStop probes old every period until it refuses or fails a write,
// or until ctx ends (so bound ctx), and returns when it first did, zero
// when it did not. A graceful Sentinel failover leaves the old primary
// taking writes after the new one took its first, until Sentinel turns it
// into a replica: gateways still on it write counts the new primary never
// sees until then. A probe that timed out is no refusal (a demoted
// primary answers at once); a loaded machine's slow answer is not one.
func WatchStop(ctx context.Context, old Probe, period time.Duration) time.Time {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		now := time.Now()
		err := bounded(ctx, old)
		var ne net.Error
		timedOut := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
		if err != nil && !timedOut && ctx.Err() == nil {
			return now
		}
		select {
		case <-ctx.Done():
			return time.Time{}
		case <-tick.C:
		}
	}
}

// Unfinished says why a failover (action, planned at at and begun at
// began) whose watch saw no new primary take a write was not carried out:
// the run ended at ended, before the election did, or, ended zero, the
// watch ran its whole limit. What a run measures after such a failover is
// the election itself, never the deployment after one.
func Unfinished(action string, at time.Duration, began, ended time.Time, limit time.Duration) string {
	at = at.Round(time.Millisecond)
	if cut := ended.Sub(began); !ended.IsZero() && cut < limit {
		return fmt.Sprintf("%s at %s did not finish: the run ended %s after the failover began, before a new primary took a write (a longer run would see the election end)",
			action, at, cut.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s at %s did not finish: no new primary took a write within %s of the failover", action, at, limit)
}
