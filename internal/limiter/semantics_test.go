package limiter

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

// run sends n requests for id and returns the decisions.
func run(t *testing.T, l Limiter, id string, n int) []Decision {
	t.Helper()
	out := make([]Decision, n)
	for i := range out {
		d, err := l.Allow(context.Background(), id, 1)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		out[i] = d
	}
	return out
}

func allowed(ds []Decision) int {
	n := 0
	for _, d := range ds {
		if d.Allowed {
			n++
		}
	}
	return n
}

// TestFixedWindowsAdmitExactlyL: every fixed-window design admits exactly
// L per window, counts Remaining down to 0, tells denied callers when the
// window ends, and admits L again in the next window.
func TestFixedWindowsAdmitExactlyL(t *testing.T) {
	t.Parallel()
	const L = 5
	real := realBackend(t)
	tests := []struct {
		name    string
		algo    string
		backend string // "mini", "real" or "" (local)
	}{
		{"fixed-window/miniredis", design.RedisFixedWindow, "mini"},
		{"fixed-window-refresh/miniredis", design.RedisFixedWindowRefresh, "mini"},
		{"clock-window/redis-server", design.RedisClockWindow, "real"},
		{"clock-window/miniredis", design.RedisClockWindow, "mini"},
		{"get-incr/miniredis", design.RedisGetIncr, "mini"},
		{"local-fixed-window", design.LocalFixedWindow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Algorithm: tt.algo, Limit: rate.Limit{Count: L, Window: time.Second}, Prefix: "fx:" + tt.name + ":"}
			clock := newFakeClock(epoch.Add(100 * time.Millisecond))
			var b backend
			var l Limiter
			switch tt.backend {
			case "mini":
				b = miniBackend(t, clock.Now())
				l = mustNew(t, cfg, b.client, clock.Clock())
			case "real":
				b = real
				l = mustNew(t, cfg, b.client, clock.Clock())
			default:
				l = mustNew(t, cfg, nil, clock.Clock())
			}
			for window := 0; window < 3; window++ {
				ds := run(t, l, "alice", L+3)
				if got := allowed(ds); got != L {
					t.Fatalf("window %d: allowed %d of %d, want %d", window, got, L+3, L)
				}
				for i, d := range ds[:L] {
					if !d.Allowed || d.Remaining != int64(L-1-i) {
						t.Fatalf("window %d request %d: %+v, want allowed with remaining %d", window, i, d, L-1-i)
					}
				}
				for _, d := range ds[L:] {
					// Up to 1 ms past W: Redis's clock counts whole
					// milliseconds, so a key outlives its PTTL by up to one.
					if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second+time.Millisecond || d.Remaining != 0 {
						t.Fatalf("window %d: denial %+v, want retry-after in (0, 1s+1ms] and remaining 0", window, d)
					}
				}
				// a silent second: even the refresh bug's key expires
				b.advance(clock, time.Second)
			}
		})
	}
}

// TestFixedWindowRollsOnRealServer: the TTL set when the window opens ends
// the window on a real server's clock. Each window's six calls must all
// fall in it: with 400ms windows a busy machine once took longer, and the
// second window rolled under them.
func TestFixedWindowRollsOnRealServer(t *testing.T) {
	t.Parallel()
	b := realBackend(t)
	const w = 1500 * time.Millisecond
	cfg := Config{Algorithm: design.RedisFixedWindow, Limit: rate.Limit{Count: 4, Window: w}}
	l := mustNew(t, cfg, b.client, nil)
	if got := allowed(run(t, l, "bob", 6)); got != 4 {
		t.Fatalf("first window allowed %d, want 4", got)
	}
	ttl, err := b.client.PTTL(context.Background(), Keys(cfg, "bob", time.Now())[0]).Result()
	if err != nil || ttl <= 0 || ttl > w {
		t.Fatalf("PTTL = %v, %v; want in (0, %v]", ttl, err, w)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if got := allowed(run(t, l, "bob", 6)); got != 4 {
		t.Fatalf("second window allowed %d, want 4", got)
	}
}

// A fixed window's Retry-After is never early on a real server: PTTL
// truncates to the millisecond, so a client that waited exactly what a
// denial said, to the nanosecond, would otherwise find the key still alive
// up to a millisecond. Waiting longer (a slow machine) only helps, so the
// test does not depend on the machine's speed.
func TestFixedWindowRetryAfterNeverEarly(t *testing.T) {
	t.Parallel()
	b := realBackend(t)
	// The three designs that take Retry-After from a key's expiry.
	for _, alg := range []string{design.RedisFixedWindow, design.RedisFixedWindowRefresh, design.RedisGetIncr} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			l := mustNew(t, Config{Algorithm: alg, Limit: rate.Limit{Count: 2, Window: 150 * time.Millisecond}, Prefix: "exact:"}, b.client, nil)
			ctx := context.Background()
			for round := range 8 {
				var d Decision
				for d.RetryAfter == 0 {
					var err error
					if d, err = l.Allow(ctx, "erin", 1); err != nil {
						t.Fatal(err)
					}
				}
				if d.Allowed || d.RetryAfter > 151*time.Millisecond {
					t.Fatalf("round %d: denial %+v, want Retry-After within the window", round, d)
				}
				time.Sleep(d.RetryAfter)
				if again, err := l.Allow(ctx, "erin", 1); err != nil || !again.Allowed {
					t.Fatalf("round %d: waited the %v Retry-After said and got %+v (%v): the hint was early", round, d.RetryAfter, again, err)
				}
			}
		})
	}
}

// TestRefreshBugKeepsKeyAlive: under steady traffic faster than once per W
// the refresh script never lets its window end, so after L admissions it
// denies everything; the correct script's window rolls on time. When the
// traffic stops, the buggy key finally expires W after the last request.
func TestRefreshBugKeepsKeyAlive(t *testing.T) {
	t.Parallel()
	b := realBackend(t)
	const w = 400 * time.Millisecond
	ctx := context.Background()
	// A stall of the machine longer than W between two requests would let
	// even the buggy key expire; such a run proves nothing and is repeated,
	// four runs in all, the last judged whatever its gaps.
	calmtest.Retry(t, 4, func(attempt int) string {
		prefix := "refresh" + strconv.Itoa(attempt) + ":"
		good := mustNew(t, Config{Algorithm: design.RedisFixedWindow, Limit: rate.Limit{Count: 2, Window: w}, Prefix: prefix}, b.client, nil)
		badCfg := Config{Algorithm: design.RedisFixedWindowRefresh, Limit: rate.Limit{Count: 2, Window: w}, Prefix: prefix}
		bad := mustNew(t, badCfg, b.client, nil)
		var goodN, badN int
		var worstGap time.Duration
		start := time.Now()
		last := start
		for i := 0; i < 30; i++ {
			now := time.Now()
			worstGap = max(worstGap, now.Sub(last))
			last = now
			if d, err := good.Allow(ctx, "carol", 1); err != nil {
				t.Fatal(err)
			} else if d.Allowed {
				goodN++
			}
			if d, err := bad.Allow(ctx, "carol", 1); err != nil {
				t.Fatal(err)
			} else if d.Allowed {
				badN++
			}
			time.Sleep(w / 8)
		}
		elapsed := time.Since(start)
		if worstGap >= w*3/4 && attempt < 4 {
			return fmt.Sprintf("a %v gap between requests", worstGap)
		}
		if badN != 2 {
			t.Errorf("refresh bug admitted %d over %v, want exactly 2 (the window never rolls)", badN, elapsed)
		}
		// The correct design opens a new window at least every W plus one gap.
		if want := int(elapsed/(w+worstGap)) * 2; goodN < want || goodN < 4 {
			t.Errorf("fixed window admitted %d over %v, want at least %d", goodN, elapsed, max(want, 4))
		}
		key := Keys(badCfg, "carol", time.Now())[0]
		if ttl := b.client.PTTL(ctx, key).Val(); ttl <= 0 {
			t.Fatalf("buggy key PTTL %v right after traffic, want alive", ttl)
		}
		time.Sleep(w + 100*time.Millisecond)
		if n := b.client.Exists(ctx, key).Val(); n != 0 {
			t.Fatalf("buggy key still exists %v after the traffic stopped", w+100*time.Millisecond)
		}
		return ""
	})
}

// TestTokenBucketCapacityAndRefill: a full bucket admits its capacity at
// once, then one request per refill interval; idle time refills it to
// capacity and no further.
func TestTokenBucketCapacityAndRefill(t *testing.T) {
	t.Parallel()
	real := realBackend(t)
	for _, algo := range []string{design.RedisTokenBucket, design.LocalTokenBucket} {
		t.Run(algo, func(t *testing.T) {
			// 10 per 100s refills one token every 10s; capacity 3. The
			// real server's TTL (the time until the bucket is full) runs
			// in real time, so the fake times are long enough that no key
			// can expire while the test runs, however slow the machine.
			cfg := Config{Algorithm: algo, Limit: rate.Limit{Count: 10, Window: 100 * time.Second}, Capacity: 3, Prefix: "tb-" + algo + ":"}
			clock := newFakeClock(epoch)
			client := real.client
			var l Limiter
			if IsLocal(algo) {
				l = mustNew(t, cfg, nil, clock.Clock())
			} else {
				l = mustNew(t, cfg, client, clock.Clock())
			}
			ds := run(t, l, "dave", 5)
			if got := allowed(ds); got != 3 {
				t.Fatalf("full bucket admitted %d, want capacity 3", got)
			}
			if d := ds[3]; d.RetryAfter != 10*time.Second || d.Reset != 30*time.Second {
				t.Fatalf("empty bucket denial %+v, want retry-after 10s, reset 30s", d)
			}
			clock.Add(10 * time.Second)
			if got := allowed(run(t, l, "dave", 3)); got != 1 {
				t.Fatalf("after one refill interval admitted %d, want 1", got)
			}
			clock.Add(4 * time.Second)
			if got := allowed(run(t, l, "dave", 1)); got != 0 {
				t.Fatalf("before the next token admitted %d, want 0", got)
			}
			clock.Add(1000 * time.Second)
			ds = run(t, l, "dave", 6)
			if got := allowed(ds); got != 3 {
				t.Fatalf("after a long idle admitted %d, want capacity 3 (no more)", got)
			}
			if ds[0].Remaining != 2 {
				t.Fatalf("first of a full bucket: remaining %d, want 2", ds[0].Remaining)
			}
		})
	}
}

// TestSlidingWindowWeightedEstimate: 30% into the next window the previous
// window's 10 count as 7, so 3 more fit; at 60% they count as 4, so 3 more.
func TestSlidingWindowWeightedEstimate(t *testing.T) {
	t.Parallel()
	b := realBackend(t)
	cfg := Config{Algorithm: design.RedisSlidingWindow, Limit: rate.Limit{Count: 10, Window: time.Second}}
	clock := newFakeClock(epoch.Add(500 * time.Millisecond))
	l := mustNew(t, cfg, b.client, clock.Clock())
	if got := allowed(run(t, l, "erin", 12)); got != 10 {
		t.Fatalf("first window admitted %d, want 10", got)
	}
	clock.Add(800 * time.Millisecond) // 1.3 windows from epoch
	ds := run(t, l, "erin", 5)
	if got := allowed(ds); got != 3 {
		t.Fatalf("at 30%% of the next window admitted %d, want 3 (estimate 10*0.7)", got)
	}
	// denied at estimate 10: 3 + 10*(1-f) + 1 <= 10 needs f >= 0.4, 100ms away
	if d := ds[3]; d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("denial %+v, want retry-after 100ms", d)
	}
	clock.Add(300 * time.Millisecond)
	if got := allowed(run(t, l, "erin", 5)); got != 3 {
		t.Fatalf("at 60%% admitted %d, want 3 (estimate 10*0.4 + 3)", got)
	}
}

// TestSlidingLogIsExact: the log admits exactly L in every sliding window,
// and an entry leaves exactly W after it was admitted.
func TestSlidingLogIsExact(t *testing.T) {
	t.Parallel()
	b := realBackend(t)
	cfg := Config{Algorithm: design.RedisSlidingLog, Limit: rate.Limit{Count: 3, Window: time.Second}}
	clock := newFakeClock(epoch)
	l := mustNew(t, cfg, b.client, clock.Clock())
	steps := []struct {
		at    time.Duration
		allow bool
		retry time.Duration
	}{
		{0, true, 0},
		{400 * time.Millisecond, true, 0},
		{800 * time.Millisecond, true, 0},
		{999 * time.Millisecond, false, time.Millisecond},
		{1000 * time.Millisecond, true, 0},
		{1300 * time.Millisecond, false, 100 * time.Millisecond},
		{1400 * time.Millisecond, true, 0},
	}
	for _, s := range steps {
		clock.ns.Store(epoch.Add(s.at).UnixNano())
		d, err := l.Allow(context.Background(), "frank", 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != s.allow || d.RetryAfter != s.retry {
			t.Fatalf("at %v: %+v, want allowed=%v retry-after %v", s.at, d, s.allow, s.retry)
		}
	}
	if n := b.client.ZCard(context.Background(), Keys(cfg, "frank", clock.Now())[0]).Val(); n != 3 {
		t.Fatalf("log holds %d entries, want 3 (older ones trimmed)", n)
	}
}

// TestLocalDesignsAreByLocal: the local designs decide in memory and say so.
func TestLocalDesignsAreByLocal(t *testing.T) {
	t.Parallel()
	for _, algo := range []string{design.LocalFixedWindow, design.LocalTokenBucket} {
		l := mustNew(t, Config{Algorithm: algo, Limit: rate.Limit{Count: 1, Window: time.Second}}, nil, nil)
		for _, d := range run(t, l, "gina", 2) {
			if d.By != decision.ByLocal {
				t.Fatalf("%s decided by %v, want local", algo, d.By)
			}
		}
	}
}
