package traffic

import (
	"context"
	"fmt"
	"math/big"
	"runtime"
	"time"

	"github.com/rlctl/rlctl/internal/workload"
)

// share is what of its plan one process runs (Plan.Segment).
type share struct {
	// whole: the process runs everything and nothing below is consulted.
	whole bool
	// byRequests: every identity is shared, each request by its stripe.
	byRequests bool
	st         workload.Striped
	// lo, hi is the block of names (identities, or race's round
	// identities) the process runs when it shares by identities.
	lo, hi int
	// clients are the closed model's clients this process runs.
	clients []int
	// maxRequests is the closed model's cap for this process: its block of
	// Plan.MaxRequests (the open model counts the whole plan's requests in
	// every process, so each stops where the whole plan would).
	maxRequests int64
}

// fraction is about how much of the plan's requests the process sends:
// its block of the names, or its stripe of every identity's requests.
func (sh share) fraction(seg workload.Segment, names int) float64 {
	switch {
	case sh.whole:
		return 1
	case sh.byRequests:
		f, _ := new(big.Rat).Sub(seg.To, seg.From).Float64()
		return f
	case names > 0:
		return float64(sh.hi-sh.lo) / float64(names)
	}
	return 1
}

// shareOf works out p's share for a process whose plan has the given
// names (identities, or race's round identities); an error when the
// segment would get nothing of it.
func shareOf(p Plan, names int) (share, error) {
	sh := share{whole: p.Segment.IsWhole(), lo: 0, hi: names, maxRequests: p.MaxRequests}
	all := make([]int, p.Concurrency)
	for c := range all {
		all[c] = c
	}
	sh.clients = all
	if sh.whole {
		return sh, nil
	}
	seg := p.Segment
	lo, hi := seg.Block(int(p.MaxRequests))
	if p.Model == workload.ModelClosed {
		sh.maxRequests = int64(hi - lo)
	}
	if p.SegmentBy == workload.SegmentByRequests {
		sh.byRequests, sh.st = true, seg.Striped()
		clo, chi := seg.Block(p.Concurrency)
		sh.clients = all[clo:chi]
		if p.Model == workload.ModelClosed && len(sh.clients) == 0 {
			return sh, planErr("segment %s gets none of the %d clients (concurrency): use fewer segments or more concurrency", seg, p.Concurrency)
		}
		return sh, nil
	}
	sh.lo, sh.hi = seg.Block(names)
	if sh.lo == sh.hi {
		return sh, planErr("segment %s gets none of the %d identities: use fewer segments, more identities, or traffic.segment: requests to share every identity's requests", seg, names)
	}
	if p.Model == workload.ModelClosed {
		// Client c speaks for identity c mod identities (see Plan.Retry):
		// the segment runs the clients of its identities.
		sh.clients = nil
		for c := range p.Concurrency {
			if sh.ownsName(c % names) {
				sh.clients = append(sh.clients, c)
			}
		}
		if len(sh.clients) == 0 {
			return sh, planErr("segment %s has identities but none of the %d clients (client c speaks for identity c mod %d): raise concurrency to at least the identities", seg, p.Concurrency, names)
		}
	}
	return sh, nil
}

// ownsName reports whether the process runs identity (or race name) i.
func (sh *share) ownsName(i int) bool { return i >= sh.lo && i < sh.hi }

// ownsHit reports whether the process sends request number hit of an
// identity-interleaved pattern over n identities (see engine.hitJob).
func (sh *share) ownsHit(hit uint64, n int) bool {
	switch {
	case sh.whole:
		return true
	case sh.byRequests:
		return sh.st.Owns(hit)
	}
	return sh.ownsName(int(hit % uint64(n)))
}

// waitFor waits until the wall clock now reads at, and returns how late it
// got there (zero when on time). Later than the run's whole duration d is
// an error wrapping ErrLate: the run would share no instant with the
// others that started at at.
func waitFor(ctx context.Context, at time.Time, now func() time.Time, d time.Duration) (time.Duration, error) {
	// A timer wakes up to a millisecond or so late: it is set short of at
	// and the rest is spun.
	const spin = 2 * time.Millisecond
	if wait := at.Sub(now()) - spin; wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("waiting for the common start %s: %w", at.UTC().Format(time.RFC3339Nano), ctx.Err())
		}
	}
	for now().Before(at) {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("waiting for the common start %s: %w", at.UTC().Format(time.RFC3339Nano), ctx.Err())
		}
		runtime.Gosched()
	}
	late := now().Sub(at)
	if late >= d {
		return late, fmt.Errorf("%w: reached %s %s after it, later than the run's whole %s", ErrLate, at.UTC().Format(time.RFC3339Nano), late.Round(time.Millisecond), d)
	}
	return late, nil
}
