package limiter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestGCRAMatchesRedisRate: redis-gcra with clock: redis decides like
// go-redis/redis_rate, the reference GCRA, on the same real server and the
// same request sequence. The emission interval is 200ms and every request
// is scheduled at least ~50ms from a point where the answer flips.
func TestGCRAMatchesRedisRate(t *testing.T) {
	t.Parallel()
	b := realBackend(t)
	for _, burst := range []int{5, 2} {
		t.Run(fmt.Sprintf("burst-%d", burst), func(t *testing.T) {
			cfg := Config{Algorithm: design.RedisGCRA, Limit: rate.Limit{Count: 5, Window: time.Second}, Capacity: int64(burst), Clock: ClockRedis}
			ours := mustNew(t, cfg, b.client, nil)
			ref := redis_rate.NewLimiter(b.client)
			lim := redis_rate.Limit{Rate: 5, Period: time.Second, Burst: burst}
			// offsets in ms; repeated offsets are bursts
			schedule := []int{0, 0, 0, 0, 0, 0, 0, 100, 300, 350, 500, 700, 700, 1100, 1100, 1100, 1500, 2700, 2700, 2700, 2700, 2700, 2700, 2750}
			ctx := context.Background()
			// A stall of the machine between our call and redis_rate's can move
			// one of them across a point where the answer flips; such a run
			// proves nothing and is repeated (six runs at most).
			calmtest.Retry(t, 6, func(attempt int) string {
				id := fmt.Sprintf("hank-%d-%d", burst, attempt)
				var problems []string
				var worstGap time.Duration
				start := time.Now()
				for i, at := range schedule {
					time.Sleep(time.Until(start.Add(time.Duration(at) * time.Millisecond)))
					t0 := time.Now()
					d, err := ours.Allow(ctx, id, 1)
					if err != nil {
						t.Fatal(err)
					}
					r, err := ref.Allow(ctx, id, lim)
					if err != nil {
						t.Fatal(err)
					}
					// the two calls happen one after the other: their clocks differ
					// by up to the time both took
					gap := time.Since(t0) + 2*time.Millisecond
					worstGap = max(worstGap, gap)
					if d.Allowed != (r.Allowed == 1) {
						problems = append(problems, fmt.Sprintf("request %d at %dms: ours allowed=%v, redis_rate allowed=%d", i, at, d.Allowed, r.Allowed))
						break
					}
					// redis_rate computes in float seconds since 2017 and truncates,
					// so an exact 1.0 can come out as 0.999... -> 0 there
					// (and a call a moment later can see one more or one less)
					if diff := d.Remaining - int64(r.Remaining); diff < -1 || diff > 1 {
						problems = append(problems, fmt.Sprintf("request %d: remaining %d, redis_rate %d", i, d.Remaining, r.Remaining))
					}
					// each limiter's TAT was set by its own earlier calls, so the
					// gaps of those calls add up too
					if !d.Allowed && absDur(d.RetryAfter-r.RetryAfter) > gap+worstGap {
						problems = append(problems, fmt.Sprintf("request %d: retry-after %v, redis_rate %v", i, d.RetryAfter, r.RetryAfter))
					}
					if d.ServerTime.IsZero() {
						problems = append(problems, fmt.Sprintf("request %d: no server time with clock: redis", i))
					}
				}
				if len(problems) == 0 {
					return ""
				}
				if worstGap < 40*time.Millisecond || attempt == 6 {
					t.Fatalf("differs from redis_rate (worst gap between the calls %v):\n%s", worstGap, strings.Join(problems, "\n"))
				}
				return fmt.Sprintf("disturbed by a %v stall: %v", worstGap, problems)
			})
		})
	}
}

// TestGCRAMatchesRedisRateControlledTime: the same comparison on
// miniredis, whose TIME the test sets before each pair of calls, so both
// see exactly the same instant and a long random schedule can be compared
// request by request.
func TestGCRAMatchesRedisRateControlledTime(t *testing.T) {
	t.Parallel()
	now := epoch
	b := miniBackend(t, now)
	for _, burst := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("burst-%d", burst), func(t *testing.T) {
			cfg := Config{Algorithm: design.RedisGCRA, Limit: rate.Limit{Count: 10, Window: time.Second}, Capacity: int64(burst), Clock: ClockRedis}
			ours := mustNew(t, cfg, b.client, nil)
			ref := redis_rate.NewLimiter(b.client)
			lim := redis_rate.Limit{Rate: 10, Period: time.Second, Burst: burst}
			rng := rand.New(rand.NewPCG(uint64(burst), 7))
			id := fmt.Sprintf("iris-%d", burst)
			allowedN := 0
			for i := 0; i < 200; i++ {
				if rng.IntN(3) > 0 {
					// steps in random µs: two requests exactly a multiple of the
					// 100ms emission interval apart, where float rounding would
					// decide, are then all but impossible
					now = now.Add(time.Duration(rng.Int64N(150_000)) * time.Microsecond)
					b.mini.SetTime(now)
				}
				d, err := ours.Allow(context.Background(), id, 1)
				if err != nil {
					t.Fatal(err)
				}
				r, err := ref.Allow(context.Background(), id, lim)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed != (r.Allowed == 1) {
					t.Fatalf("request %d at +%v: ours allowed=%v, redis_rate allowed=%d", i, now.Sub(epoch), d.Allowed, r.Allowed)
				}
				if diff := d.Remaining - int64(r.Remaining); diff < 0 || diff > 1 {
					t.Fatalf("request %d: remaining %d, redis_rate %d", i, d.Remaining, r.Remaining)
				}
				if !d.ServerTime.Equal(now) {
					t.Fatalf("request %d: server time %v, want %v", i, d.ServerTime, now)
				}
				if d.Allowed {
					allowedN++
				}
			}
			if allowedN == 0 || allowedN == 200 {
				t.Fatalf("schedule admitted %d of 200: it tests nothing", allowedN)
			}
		})
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// gatewayClients returns n clients of the same server, each with its own
// pool, like n gateways.
func gatewayClients(t testing.TB, s *redistest.Server, n int) []*redis.Client {
	out := make([]*redis.Client, n)
	for i := range out {
		out[i] = s.Client(t)
	}
	return out
}

// TestRaceAtLimitMinusOne: an identity one below its limit gets one request
// through every gateway at the same instant. GET-then-INCR lets several
// through (the pause holds every read before any write, so this is
// deterministic); every Lua design lets exactly one through.
func TestRaceAtLimitMinusOne(t *testing.T) {
	t.Parallel()
	const L, gateways = 5, 6
	b := realBackend(t)
	clients := gatewayClients(t, b.server, gateways)
	algos := []string{design.RedisGetIncr, design.RedisFixedWindow, design.RedisFixedWindowRefresh, design.RedisClockWindow,
		design.RedisTokenBucket, design.RedisSlidingWindow, design.RedisSlidingLog, design.RedisGCRA}
	for _, algo := range algos {
		t.Run(algo, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Algorithm: algo, Limit: rate.Limit{Count: L, Window: time.Minute}, Prefix: "race:", Clock: ClockGateway}
			if algo == design.RedisGetIncr {
				cfg.Pause = 300 * time.Millisecond
			}
			clock := newFakeClock(epoch.Add(time.Second))
			ls := make([]Limiter, gateways)
			for i := range ls {
				ls[i] = mustNew(t, cfg, clients[i], clock.Clock())
			}
			for round := 0; round < 3; round++ {
				id := fmt.Sprintf("%s-%d", algo, round)
				if got := allowed(run(t, ls[0], id, L-1)); got != L-1 {
					t.Fatalf("warm-up admitted %d, want %d", got, L-1)
				}
				var wg sync.WaitGroup
				var mu sync.Mutex
				admitted := 0
				ready := make(chan struct{})
				for i := range ls {
					wg.Add(1)
					go func(l Limiter) {
						defer wg.Done()
						<-ready
						d, err := l.Allow(context.Background(), id, 1)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							mu.Lock()
							admitted++
							mu.Unlock()
						}
					}(ls[i])
				}
				close(ready)
				wg.Wait()
				if algo == design.RedisGetIncr {
					if admitted < 2 {
						t.Fatalf("round %d: GET-then-INCR admitted %d, want the race to admit more than one", round, admitted)
					}
					continue
				}
				if admitted != 1 {
					t.Fatalf("round %d: admitted %d at L-1 through %d gateways, want exactly 1", round, admitted, gateways)
				}
			}
		})
	}
}

// TestClockWindowSkew: two gateways whose clocks straddle a window boundary
// count into two different window keys, so together they admit 2L at one
// instant; with clock: redis they share Redis's one clock and admit L.
func TestClockWindowSkew(t *testing.T) {
	t.Parallel()
	const L = 5
	b := realBackend(t)
	clients := gatewayClients(t, b.server, 2)
	tests := []struct {
		clock string
		want  int
	}{
		{ClockGateway, 2 * L},
		{ClockRedis, L},
	}
	for _, tt := range tests {
		t.Run(tt.clock, func(t *testing.T) {
			// an hour-long window, so the real clock (clock: redis) does not
			// cross a boundary during the test
			cfg := Config{Algorithm: design.RedisClockWindow, Limit: rate.Limit{Count: L, Window: time.Hour}, Clock: tt.clock, Prefix: "skew-" + tt.clock + ":"}
			base := newFakeClock(epoch.Add(time.Hour - 50*time.Millisecond))
			ahead := mustNew(t, cfg, clients[0], base.Skewed(100*time.Millisecond))
			behind := mustNew(t, cfg, clients[1], base.Skewed(-100*time.Millisecond))
			got := allowed(run(t, ahead, "ivan", 2*L)) + allowed(run(t, behind, "ivan", 2*L))
			if got != tt.want {
				t.Fatalf("admitted %d at one instant, want %d", got, tt.want)
			}
		})
	}
}
