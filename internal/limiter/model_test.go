package limiter

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

// The models below are brute-force restatements of each design, written
// from its definition rather than from its script: the property test feeds
// the same random request sequence to the script and to the model and
// wants the same allowed/denied answer every time.
type model interface {
	allow(nowUs, cost int64) bool
}

func newModel(cfg Config) model {
	l, w := cfg.Limit.Count, cfg.Limit.Window.Milliseconds()
	switch cfg.Algorithm {
	case design.RedisFixedWindow:
		return &ttlWindowModel{limit: l, w: w}
	case design.RedisFixedWindowRefresh:
		return &ttlWindowModel{limit: l, w: w, refresh: true}
	case design.RedisClockWindow, design.LocalFixedWindow:
		return &alignedModel{limit: l, w: w, counts: map[int64]int64{}}
	case design.RedisTokenBucket:
		return &bucketModel{cap: float64(capacityOf(cfg)), rate: float64(l) / float64(w)}
	case design.RedisSlidingWindow:
		return &slidingModel{limit: l, w: w, counts: map[int64]int64{}}
	case design.RedisSlidingLog:
		return &logModel{limit: l, w: float64(w)}
	case design.RedisGCRA:
		return &gcraModel{emission: float64(w) / float64(l), burst: float64(capacityOf(cfg))}
	}
	panic("no model for " + cfg.Algorithm)
}

// ttlWindowModel: a window opens with the first admitted request and lasts
// W; with refresh, every request while the key lives pushes the end out.
type ttlWindowModel struct {
	limit, w, n int64
	end         float64
	refresh     bool
}

func (m *ttlWindowModel) allow(us, cost int64) bool {
	now := float64(us) / 1000
	if m.n > 0 && now >= m.end {
		m.n = 0
	}
	ok := m.n+cost <= m.limit
	if ok {
		if m.n == 0 {
			m.end = now + float64(m.w)
		}
		m.n += cost
	}
	if m.refresh && m.n > 0 {
		m.end = now + float64(m.w)
	}
	return ok
}

type alignedModel struct {
	limit, w int64
	counts   map[int64]int64
}

func (m *alignedModel) allow(us, cost int64) bool {
	idx := int64(math.Floor(float64(us) / 1000 / float64(m.w)))
	if m.counts[idx]+cost > m.limit {
		return false
	}
	m.counts[idx] += cost
	return true
}

type bucketModel struct {
	cap, rate, tokens, ts float64
	seen                  bool
}

func (m *bucketModel) allow(us, cost int64) bool {
	now := float64(us) / 1000
	if !m.seen || now-m.ts >= (m.cap-m.tokens)/m.rate+1 {
		// a new (or expired, hence full) bucket
		m.tokens, m.ts, m.seen = m.cap, now, true
	}
	m.tokens = math.Min(m.cap, m.tokens+math.Max(0, now-m.ts)*m.rate)
	m.ts = now
	if m.tokens >= float64(cost) {
		m.tokens -= float64(cost)
		return true
	}
	return false
}

type slidingModel struct {
	limit, w int64
	counts   map[int64]int64
}

func (m *slidingModel) allow(us, cost int64) bool {
	now := float64(us) / 1000
	w := float64(m.w)
	idx := int64(math.Floor(now / w))
	frac := (now - float64(idx)*w) / w
	est := float64(m.counts[idx-1])*(1-frac) + float64(m.counts[idx])
	if est+float64(cost) > float64(m.limit) {
		return false
	}
	m.counts[idx] += cost
	return true
}

type logModel struct {
	limit int64
	w     float64
	times []float64
}

func (m *logModel) allow(us, cost int64) bool {
	now := float64(us) / 1000
	var n int64
	for _, t := range m.times {
		if t > now-m.w {
			n++
		}
	}
	if n+cost > m.limit {
		return false
	}
	for i := int64(0); i < cost; i++ {
		m.times = append(m.times, now)
	}
	return true
}

type gcraModel struct {
	emission, burst, tat float64
}

func (m *gcraModel) allow(us, cost int64) bool {
	now := float64(us) / 1000
	tat := math.Max(m.tat, now)
	newTAT := tat + m.emission*float64(cost)
	if now-(newTAT-m.emission*m.burst) < 0 {
		return false
	}
	// the script stores TAT with three decimals (µs)
	m.tat, _ = strconv.ParseFloat(strconv.FormatFloat(newTAT, 'f', 3, 64), 64)
	return true
}

// TestScriptsMatchModels runs random request sequences (bursts, pauses,
// steps across window boundaries) through every design and its model.
// miniredis runs every design, its TTLs moved with the fake clock; the real
// redis-server runs the designs whose windows come from the passed-in clock
// (its TTLs run in real time, which a fake clock cannot steer, so there the
// fake clock keeps at least real time's pace).
func TestScriptsMatchModels(t *testing.T) {
	t.Parallel()
	limits := []Config{
		{Limit: rate.Limit{Count: 5, Window: time.Second}},
		{Limit: rate.Limit{Count: 7, Window: 300 * time.Millisecond}, Capacity: 3},
		{Limit: rate.Limit{Count: 1, Window: 100 * time.Millisecond}},
	}
	algos := []string{design.RedisFixedWindow, design.RedisFixedWindowRefresh, design.RedisClockWindow, design.RedisTokenBucket,
		design.RedisSlidingWindow, design.RedisSlidingLog, design.RedisGCRA, design.LocalFixedWindow}
	real := realBackend(t)
	for _, algo := range algos {
		for li, base := range limits {
			for _, be := range []string{"miniredis", "redis-server", "miniredis-time"} {
				ttlBased := algo == design.RedisFixedWindow || algo == design.RedisFixedWindowRefresh
				if be == "redis-server" && (ttlBased || IsLocal(algo)) {
					continue
				}
				if be == "miniredis-time" && (ttlBased || IsLocal(algo)) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/%s", algo, li, be), func(t *testing.T) {
					t.Parallel()
					cfg := base
					cfg.Algorithm = algo
					cfg.Clock = ClockGateway
					if be == "redis-server" && cfg.Limit.Window < time.Second {
						// a real server expires keys in real time: keep its TTLs
						// far longer than a loaded machine takes per fake window
						cfg.Limit.Window *= 10
					}
					if be == "miniredis-time" {
						// clock: redis, with miniredis' TIME moved along
						cfg.Clock = ClockRedis
					}
					// On the real server, a mismatch that a slow call
					// explains (below) runs the sequence again, on keys
					// of its own; any other mismatch fails at once.
					busy := calmtest.Retry(t, 3, func(try int) string {
						return matchModel(t, cfg, be, li, try, real)
					})
					if busy != "" {
						t.Fatal(busy)
					}
				})
			}
		}
	}
}

// matchModel runs one random sequence of TestScriptsMatchModels through
// cfg's design on backend be and its model, failing t on a mismatch. On
// the real redis-server it returns instead why the mismatch may be the
// machine's: there a key expires in real time when the server runs the
// call, and a call that took longer than the millisecond the fake clock
// keeps ahead of real time per step let the server expire what the model,
// on the fake clock, still held.
func matchModel(t *testing.T, cfg Config, be string, li, try int, real backend) string {
	t.Helper()
	algo := cfg.Algorithm
	clock := newFakeClock(epoch)
	b := real
	if be != "redis-server" {
		b = miniBackend(t, epoch)
	}
	var l Limiter
	if IsLocal(algo) {
		l = mustNew(t, cfg, nil, clock.Clock())
	} else {
		cfg.Prefix = fmt.Sprintf("m%d-%d:", li, try)
		l = mustNew(t, cfg, b.client, clock.Clock())
	}
	m := newModel(cfg)
	rng := rand.New(rand.NewPCG(uint64(li), uint64(len(algo))))
	w := cfg.Limit.Window
	id := "user-" + algo
	lastReal := time.Now()
	for step := 0; step < 200; step++ {
		switch r := rng.IntN(10); {
		case r < 4: // same instant: a burst
		case r < 8:
			b.advance(clock, time.Duration(rng.Int64N(int64(w/5)))/time.Microsecond*time.Microsecond)
		default:
			b.advance(clock, time.Duration(rng.Int64N(int64(w*2)))/time.Millisecond*time.Millisecond)
		}
		if be == "redis-server" {
			// Its TTLs run in real time: the fake clock never lags it
			// (plus a millisecond, the TTLs' grain), so a key the server
			// expired is one whose time the model has seen pass too, as
			// long as the call reaches the server within that
			// millisecond. Bursts at one instant stay with the miniredis
			// backends.
			now := time.Now()
			clock.Add(now.Sub(lastReal) + time.Millisecond)
			lastReal = now
		}
		cost := int64(1)
		if rng.IntN(8) == 0 && algo != design.RedisGCRA {
			cost = 2
		}
		want := m.allow(clock.Now().UnixMicro(), cost)
		d, err := l.Allow(context.Background(), id, cost)
		took := time.Since(lastReal)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if d.Allowed != want {
			if be == "redis-server" && took > time.Millisecond {
				return fmt.Sprintf("step %d: allowed=%v, model says %v, but the call took %v: the server may have expired a key the fake clock had not yet",
					step, d.Allowed, want, took.Round(time.Microsecond))
			}
			t.Fatalf("step %d at +%v cost %d: allowed=%v, model says %v (decision %+v)",
				step, clock.Now().Sub(epoch), cost, d.Allowed, want, d)
		}
		if cfg.Clock == ClockRedis && !d.ServerTime.Equal(clock.Now()) {
			t.Fatalf("step %d: server time %v, want %v", step, d.ServerTime, clock.Now())
		}
		if cfg.Clock != ClockRedis && !d.ServerTime.IsZero() {
			t.Fatalf("step %d: server time %v with a gateway clock", step, d.ServerTime)
		}
		if !d.Allowed && d.Remaining < 0 {
			t.Fatalf("step %d: negative remaining %d", step, d.Remaining)
		}
	}
	return ""
}
