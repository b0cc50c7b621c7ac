package limiter

import (
	"context"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
)

// The local designs keep their state in the gateway's memory. They are
// correct for one gateway and wrong for many: N gateways admit N times the
// limit, which is what they exist to show.
//
// State that no longer matters (a window that ended, a bucket that has
// refilled) is dropped by a sweep of its shard at most once per window,
// so a long-running gateway (rlctl gateway serve) holds only the
// identities seen lately. Each sweep walks the shard once, and every entry
// it walks had a request since the last sweep or is deleted, so the cost
// stays proportional to the requests served.

// shards spreads identities over several locks so concurrent requests for
// different identities rarely contend.
const shards = 32

var seed = maphash.MakeSeed()

func shardOf(id string) int { return int(maphash.String(seed, id) % shards) }

// localFixedWindow counts per identity in windows aligned to the epoch of
// the gateway's clock (floor(now/W)), like redis-clock-window in memory.
type localFixedWindow struct {
	limit rate.Limit
	clock Clock
	by    decision.By
	mu    [shards]sync.Mutex
	state [shards]map[string]*windowCount
	// swept is, per shard, the window index of its last sweep.
	swept [shards]int64
}

type windowCount struct {
	idx int64
	n   int64
}

func newLocalFixedWindow(l rate.Limit, clock Clock, by decision.By) *localFixedWindow {
	f := &localFixedWindow{limit: l, clock: clock, by: by}
	for i := range f.state {
		f.state[i] = make(map[string]*windowCount)
	}
	return f
}

// Allow implements Limiter.
func (f *localFixedWindow) Allow(_ context.Context, id string, cost int64) (Decision, error) {
	now := f.clock()
	idx := windowIndex(now, f.limit.Window)
	// windows are counted in whole ms, as the scripts do: window idx ends
	// at (idx+1)*W_ms
	reset := time.UnixMilli((idx + 1) * f.limit.Window.Milliseconds()).Sub(now)
	i := shardOf(id)
	f.mu[i].Lock()
	if f.swept[i] != idx {
		// An entry of an earlier window is the same as none.
		for k, c := range f.state[i] {
			if c.idx < idx {
				delete(f.state[i], k)
			}
		}
		f.swept[i] = idx
	}
	c := f.state[i][id]
	if c == nil {
		c = &windowCount{idx: idx}
		f.state[i][id] = c
	}
	if c.idx != idx {
		c.idx, c.n = idx, 0
	}
	if c.n+cost > f.limit.Count {
		left := max(0, f.limit.Count-c.n)
		f.mu[i].Unlock()
		return Decision{Remaining: left, RetryAfter: reset, Reset: reset, By: f.by}, nil
	}
	c.n += cost
	left := f.limit.Count - c.n
	f.mu[i].Unlock()
	return Decision{Allowed: true, Remaining: left, Reset: reset, By: f.by}, nil
}

// localTokenBucket is one bucket per identity in the gateway's memory,
// refilled at Limit per Window up to capacity.
type localTokenBucket struct {
	capacity float64
	perNs    float64
	clock    Clock
	mu       [shards]sync.Mutex
	state    [shards]map[string]*bucket
	// nextSweep is, per shard, when to look for full buckets again.
	nextSweep [shards]time.Time
}

type bucket struct {
	tokens float64
	ts     time.Time
}

func newLocalTokenBucket(l rate.Limit, capacity int64, clock Clock) *localTokenBucket {
	b := &localTokenBucket{capacity: float64(capacity), perNs: float64(l.Count) / float64(l.Window), clock: clock}
	for i := range b.state {
		b.state[i] = make(map[string]*bucket)
	}
	return b
}

// Allow implements Limiter.
func (b *localTokenBucket) Allow(_ context.Context, id string, cost int64) (Decision, error) {
	now := b.clock()
	i := shardOf(id)
	b.mu[i].Lock()
	if !now.Before(b.nextSweep[i]) {
		b.sweep(i, now)
	}
	s := b.state[i][id]
	if s == nil {
		s = &bucket{tokens: b.capacity, ts: now}
		b.state[i][id] = s
	}
	if el := now.Sub(s.ts); el > 0 {
		s.tokens = math.Min(b.capacity, s.tokens+float64(el)*b.perNs)
		s.ts = now
	}
	need := float64(cost)
	d := Decision{By: decision.ByLocal}
	if s.tokens >= need {
		s.tokens -= need
		d.Allowed = true
	} else {
		d.RetryAfter = time.Duration(math.Ceil((need - s.tokens) / b.perNs))
	}
	d.Remaining = int64(s.tokens)
	d.Reset = time.Duration(math.Ceil((b.capacity - s.tokens) / b.perNs))
	b.mu[i].Unlock()
	return d, nil
}

// sweep drops shard i's buckets that are full by now: a full bucket is the
// same as none (a new one starts full). It runs once per time to refill an
// empty bucket. b.mu[i] held.
func (b *localTokenBucket) sweep(i int, now time.Time) {
	for k, s := range b.state[i] {
		if float64(now.Sub(s.ts))*b.perNs >= b.capacity-s.tokens {
			delete(b.state[i], k)
		}
	}
	b.nextSweep[i] = now.Add(time.Duration(b.capacity / b.perNs))
}
