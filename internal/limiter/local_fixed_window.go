package limiter

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

func init() {
	register(design.LocalFixedWindow, func(cfg Config, _ redis.UniversalClient, clock Clock) (Limiter, error) {
		return newLocalFixedWindow(cfg.Limit, clock, decision.ByLocal), nil
	})
}

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
