package limiter

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

func init() {
	register(design.LocalTokenBucket, func(cfg Config, _ redis.UniversalClient, clock Clock) (Limiter, error) {
		return newLocalTokenBucket(cfg.Limit, capacityOf(cfg), clock), nil
	})
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
