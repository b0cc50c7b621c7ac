package keyspace

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

func mustLimit(t testing.TB, s string) rate.Limit {
	t.Helper()
	l, err := rate.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fixture writes keys the way one library writes them (from its source:
// see the schema's comment) and says what inspect must make of them.
type fixture struct {
	name   string
	schema string
	id     string
	params Params
	write  func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time)
	// want are substrings of each key's meaning, by key name.
	want map[string]string
	// problems are substrings expected among a key's problems, by key name.
	problems map[string]string
}

func fixtures() []fixture {
	return []fixture{
		{
			name: "rlctl fixed window", schema: "redis-fixed-window", id: "alice",
			params: Params{Limit: rate.Limit{Count: 100, Window: time.Minute}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.Set(ctx, "rl:fw:{alice}", 87, 23*time.Second)
			},
			want: map[string]string{"rl:fw:{alice}": "87 of 100 used, window resets in 2"},
		},
		{
			name: "rlctl get-incr without TTL", schema: "redis-get-incr", id: "bob",
			params: Params{Limit: rate.Limit{Count: 10, Window: time.Second}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.Set(ctx, "rl:gi:{bob}", 3, 0)
			},
			want:     map[string]string{"rl:gi:{bob}": "3 of 10 used, never resets"},
			problems: map[string]string{"rl:gi:{bob}": "no TTL"},
		},
		{
			name: "rlctl fixed window above limit and TTL too long", schema: "redis-fixed-window", id: "carol",
			params: Params{Limit: rate.Limit{Count: 100, Window: time.Minute}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.Set(ctx, "rl:fw:{carol}", 150, time.Hour)
			},
			want:     map[string]string{"rl:fw:{carol}": "150 of 100 used"},
			problems: map[string]string{"rl:fw:{carol}": "longer than the schema allows"},
		},
		{
			name: "rlctl clock window", schema: "redis-clock-window", id: "dave",
			params: Params{Limit: rate.Limit{Count: 50, Window: 10 * time.Second}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				n := now.UnixMilli() / 10000
				c.Set(ctx, fmt.Sprintf("rl:cw:{dave}:%d", n), 20, 10*time.Second)
			},
			want: map[string]string{"": "20 of 50 used in window #"},
		},
		{
			name: "rlctl token bucket", schema: "redis-token-bucket", id: "erin",
			params: Params{Limit: rate.Limit{Count: 100, Window: 100 * time.Second}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				// 12.4 tokens, updated now: full in (100-12.4)/1 per s ≈ 88s.
				c.HSet(ctx, "rl:tb:{erin}", "tokens", "12.4", "ts", now.UnixMilli())
				c.Expire(ctx, "rl:tb:{erin}", 100*time.Second)
			},
			want: map[string]string{"rl:tb:{erin}": "12.4 tokens, full in 1m28s"},
		},
		{
			name: "rlctl sliding log", schema: "redis-sliding-log", id: "frank",
			params: Params{Limit: rate.Limit{Count: 100, Window: time.Minute}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				for i := 0; i < 312; i++ {
					// 300 inside the last minute, 12 older.
					at := now.Add(-time.Duration(i) * 100 * time.Millisecond)
					if i >= 300 {
						at = now.Add(-2 * time.Minute)
					}
					c.ZAdd(ctx, "rl:sl:{frank}", redis.Z{Score: float64(at.UnixMilli()), Member: fmt.Sprint(i)})
				}
				c.Expire(ctx, "rl:sl:{frank}", time.Minute)
			},
			want: map[string]string{"rl:sl:{frank}": "log holds 312 entries ("},
		},
		{
			name: "rlctl GCRA", schema: "redis-gcra", id: "gina",
			params: Params{Limit: rate.Limit{Count: 10, Window: 10 * time.Second}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				// Burst 10 at 1/s; TAT 9.8s ahead: 9.8 + 1 - 10 = 0.8s to wait.
				c.Set(ctx, "rl:gcra:{gina}", now.Add(9800*time.Millisecond).UnixMilli(), 10*time.Second)
			},
			want: map[string]string{"rl:gcra:{gina}": "next request allowed in 0.8s (GCRA)"},
		},
		{
			name: "rlctl sliding window", schema: "redis-sliding-window", id: "hal",
			params: Params{Limit: rate.Limit{Count: 10, Window: time.Minute}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				n := now.UnixMilli() / 60000
				c.Set(ctx, fmt.Sprintf("rl:sw:{hal}:%d", n), 4, 2*time.Minute)
				c.Set(ctx, fmt.Sprintf("rl:sw:{hal}:%d", n-1), 9, time.Minute)
			},
			want: map[string]string{"": "of 10 used in window #"},
		},
		{
			name: "rlctl sliding window blend", schema: "redis-sliding-window", id: "hal2",
			params: Params{Limit: rate.Limit{Count: 10, Window: time.Hour}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				n := now.UnixMilli() / 3600000
				c.Set(ctx, fmt.Sprintf("rl:sw:{hal2}:%d", n), 4, 2*time.Hour)
			},
			// No previous window: the sliding count is the current one.
			want: map[string]string{"": "4 of 10 used in window #"},
		},
		{
			name: "rlctl leasing", schema: "leasing", id: "ivy",
			params: Params{Limit: rate.Limit{Count: 100, Window: time.Minute}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.Set(ctx, fmt.Sprintf("rl:lease:{ivy}:%d", now.UnixMilli()/60000), 60, time.Minute)
			},
			want: map[string]string{"": "budget granted: 60 of 100 used"},
		},
		{
			name: "envoy ratelimit", schema: SchemaEnvoy, id: "jane",
			params: Params{Limit: rate.Limit{Count: 5, Window: time.Minute}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				// domain "api", descriptor user=jane, minute window start.
				start := now.Unix() / 60 * 60
				k := fmt.Sprintf("api_user_jane_%d", start)
				c.IncrBy(ctx, k, 7)
				c.Expire(ctx, k, 60*time.Second)
			},
			want: map[string]string{"": "7 hits, limit 5 (over by 2), window resets in"},
		},
		{
			name: "spring cloud gateway", schema: SchemaSpring, id: "kim",
			params: Params{Limit: rate.Limit{Count: 10, Window: time.Second}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.Set(ctx, "request_rate_limiter.{kim}.tokens", 4, 2*time.Second)
				c.Set(ctx, "request_rate_limiter.{kim}.timestamp", now.Unix(), 2*time.Second)
			},
			want: map[string]string{
				// 10/s, capacity 10, 4 left at a whole second: refilled
				// since then (timestamps are whole seconds), at most full.
				"request_rate_limiter.{kim}.tokens":    "tokens, full",
				"request_rate_limiter.{kim}.timestamp": "last refill",
			},
		},
		{
			name: "kong rate-limiting", schema: SchemaKong, id: "10.0.0.7",
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				start := now.Unix() / 60 * 60 * 1000
				k := fmt.Sprintf("ratelimit:00000000-0000-0000-0000-000000000000:5f2c7e1a-0000-4000-8000-000000000001:10.0.0.7:%d:minute", start)
				c.Incr(ctx, k)
				c.Expire(ctx, k, time.Minute)
			},
			want: map[string]string{"": "1 counted (limit unknown: pass --limit), window resets in"},
		},
		{
			name: "ulule limiter", schema: SchemaUlule, id: "203.0.113.9",
			params: Params{Limit: rate.Limit{Count: 1000, Window: time.Hour}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.SetNX(ctx, "limiter:203.0.113.9", 1, time.Hour)
				c.Incr(ctx, "limiter:203.0.113.9")
			},
			want: map[string]string{"limiter:203.0.113.9": "2 of 1000 used, window resets in 1h0m0s"},
		},
		{
			name: "rate-limiter-flexible", schema: SchemaFlexible, id: "198.51.100.4",
			params: Params{Limit: rate.Limit{Count: 100, Window: time.Minute}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.SetArgs(ctx, "rlflx:198.51.100.4", 0, redis.SetArgs{Mode: "NX", TTL: time.Minute})
				c.IncrBy(ctx, "rlflx:198.51.100.4", 7)
			},
			want: map[string]string{"rlflx:198.51.100.4": "7 of 100 used, window resets in 1m0s"},
		},
		{
			// Flask-Limiter's "100 per minute" on one endpoint, and a
			// sliding-window "5 per 30 second" on another: the keys name
			// their limits, so no --limit is needed.
			name: "python limits", schema: SchemaPythonLimits, id: "192.0.2.44",
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.IncrBy(ctx, "LIMITS:LIMITER/192.0.2.44/api.index/100/1/minute", 3)
				c.Expire(ctx, "LIMITS:LIMITER/192.0.2.44/api.index/100/1/minute", time.Minute)
				c.Set(ctx, "LIMITS:{LIMITER/192.0.2.44/login/5/30/second}", 2, time.Minute)
				c.Set(ctx, "LIMITER/192.0.2.44/10/1/hour", 12, time.Hour) // written by limits < 3
				// Moving windows, lists of request times, newest first: 3
				// per minute with two in the last minute and one older, and
				// 2 per minute with both used.
				at := func(d time.Duration) string {
					return strconv.FormatFloat(float64(now.Add(-d).UnixNano())/1e9, 'f', 6, 64)
				}
				c.RPush(ctx, "LIMITS:LIMITER/192.0.2.44/search/3/1/minute", at(10*time.Second), at(40*time.Second), at(90*time.Second))
				c.Expire(ctx, "LIMITS:LIMITER/192.0.2.44/search/3/1/minute", time.Minute)
				c.RPush(ctx, "LIMITS:LIMITER/192.0.2.44/login/2/1/minute", at(10*time.Second), at(40*time.Second))
				c.Expire(ctx, "LIMITS:LIMITER/192.0.2.44/login/2/1/minute", time.Minute)
			},
			want: map[string]string{
				"LIMITS:LIMITER/192.0.2.44/api.index/100/1/minute": "3 of 100 used, window resets in 1m0s",
				"LIMITS:{LIMITER/192.0.2.44/login/5/30/second}":    "2 of 5 used",
				"LIMITER/192.0.2.44/10/1/hour":                     "12 hits, limit 10 (over by 2)",
				"LIMITS:LIMITER/192.0.2.44/search/3/1/minute":      "2 of 3 used in the last 1m0s (moving window)",
				"LIMITS:LIMITER/192.0.2.44/login/2/1/minute":       "2 of 2 used in the last 1m0s (moving window), next request allowed in 2",
			},
		},
		{
			name: "rate-limit-redis", schema: SchemaRateLimitRedis, id: "::ffff:127.0.0.1",
			params: Params{Limit: rate.Limit{Count: 5, Window: 15 * time.Minute}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.Incr(ctx, "rl:::ffff:127.0.0.1")
				c.PExpire(ctx, "rl:::ffff:127.0.0.1", 15*time.Minute)
			},
			want: map[string]string{"rl:::ffff:127.0.0.1": "1 of 5 used, window resets in 15m0s"},
		},
		{
			name: "upstash fixed window", schema: SchemaUpstashWindow, id: "lee",
			params: Params{Limit: rate.Limit{Count: 10, Window: 10 * time.Second}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				k := fmt.Sprintf("@upstash/ratelimit:lee:%d", now.UnixMilli()/10000)
				c.IncrBy(ctx, k, 3)
				c.PExpire(ctx, k, 10*time.Second)
			},
			want: map[string]string{"": "3 of 10 used in window #"},
		},
		{
			name: "upstash token bucket", schema: SchemaUpstashBucket, id: "mia",
			params: Params{Limit: rate.Limit{Count: 5, Window: 10 * time.Second}, Burst: 20},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.HSet(ctx, "@upstash/ratelimit:mia", "refilledAt", now.UnixMilli(), "tokens", 7)
				c.PExpire(ctx, "@upstash/ratelimit:mia", 30*time.Second)
			},
			want: map[string]string{"@upstash/ratelimit:mia": "7.0 of 20 tokens, next refill of 5 in"},
		},
		{
			// A name that also reads as a multi-region window of "user" in
			// window 42: the fields decide.
			name: "upstash token bucket, identity ending in digits", schema: SchemaUpstashBucket, id: "user:42",
			params: Params{Limit: rate.Limit{Count: 5, Window: 10 * time.Second}, Burst: 20},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				c.HSet(ctx, "@upstash/ratelimit:user:42", "refilledAt", now.UnixMilli(), "tokens", 3)
				c.PExpire(ctx, "@upstash/ratelimit:user:42", 30*time.Second)
			},
			want: map[string]string{"@upstash/ratelimit:user:42": "3.0 of 20 tokens"},
		},
		{
			// MultiRegionRatelimit (src/lua-scripts/multi.ts): HSET key
			// requestId incrementBy, PEXPIRE window on the first; a
			// negative count is a refund.
			name: "upstash multi-region fixed window", schema: SchemaUpstashWindow, id: "noa",
			params: Params{Limit: rate.Limit{Count: 10, Window: 10 * time.Second}},
			write: func(ctx context.Context, t *testing.T, c *redis.Client, now time.Time) {
				k := fmt.Sprintf("@upstash/ratelimit:noa:%d", now.UnixMilli()/10000)
				c.HSet(ctx, k, "3fZq8bLkP0aX1cVt", 1, "Hh27PqLmZx9sW0aE", 2, "Qa81ZmXcVb0nLkJh", -1)
				c.PExpire(ctx, k, 10*time.Second)
			},
			want: map[string]string{"": "multi-region copy, 3 requests: 2 of 10 used in window #"},
		},
	}
}

func TestInspectFixtures(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	for _, fx := range fixtures() {
		t.Run(fx.name, func(t *testing.T) {
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			// An unrelated identity and an unrelated key must not show up.
			c.Set(ctx, "rl:fw:{"+fx.id+"x}", 1, time.Minute)
			c.Set(ctx, "unrelated:"+fx.id, 1, 0)
			now, err := c.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			fx.write(ctx, t, c, now)
			reg := NewRegistry(fx.params)
			in, err := Inspect(ctx, c, reg.All(), fx.id)
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Keys) == 0 {
				t.Fatalf("no keys found for %s", fx.id)
			}
			found := map[string]bool{}
			for _, k := range in.Keys {
				found[k.Key] = true
			}
			for k := range fx.want {
				if k != "" && !found[k] {
					t.Errorf("%s not found for %s", k, fx.id)
				}
			}
			for _, k := range in.Keys {
				if k.Schema != fx.schema {
					t.Errorf("%s read as %q, want %q", k.Key, k.Schema, fx.schema)
				}
				want, ok := fx.want[k.Key]
				if !ok {
					want = fx.want[""]
				}
				if !strings.Contains(k.Meaning, want) {
					t.Errorf("%s meaning %q, want it to contain %q", k.Key, k.Meaning, want)
				}
				if p, ok := fx.problems[k.Key]; ok {
					if !strings.Contains(strings.Join(k.Problems, "; "), p) {
						t.Errorf("%s problems %q, want %q", k.Key, k.Problems, p)
					}
				} else if len(k.Problems) > 0 {
					t.Errorf("%s unexpected problems %q", k.Key, k.Problems)
				}
			}
		})
	}
}

// TestInspectRedisRateWrittenByLibrary lets go-redis/redis_rate itself
// write its key, then checks inspect reads the TAT the way the library
// means it.
func TestInspectRedisRateWrittenByLibrary(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	lim := redis_rate.NewLimiter(c)
	// 10 per second, burst 10: after 10 requests the next waits ~100ms and
	// the bucket is fully reset in ~1s.
	var res *redis_rate.Result
	for i := 0; i < 10; i++ {
		r, err := lim.Allow(ctx, "nina", redis_rate.PerSecond(10))
		if err != nil {
			t.Fatal(err)
		}
		res = r
	}
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Second}})
	read := time.Now() // no later than Inspect's read of the key
	in, err := Inspect(ctx, c, reg.All(), "nina")
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Keys) != 1 || in.Keys[0].Key != "rate:nina" || in.Keys[0].Schema != SchemaRedisRate {
		t.Fatalf("keys = %+v", in.Keys)
	}
	k := in.Keys[0]
	if k.ResetMillis == nil || k.RetryMillis == nil {
		t.Fatalf("no reset/retry: %+v", k)
	}
	// The library said ResetAfter and RetryAfter for the 11th request; our
	// figures, read a moment later, can only be smaller, by little.
	wantReset := res.ResetAfter.Milliseconds()
	if got := *k.ResetMillis; got > wantReset+5 || got < wantReset-300 {
		t.Errorf("reset %dms, library said %dms", got, wantReset)
	}
	if res.Remaining != 0 {
		t.Fatalf("library remaining %d, want 0 after 10 of 10", res.Remaining)
	}
	if got := *k.RetryMillis; got > 100 || got < 0 {
		t.Errorf("retry %dms, want ≤ 100ms (one emission interval)", got)
	}
	if len(k.Problems) != 0 {
		t.Errorf("problems %q", k.Problems)
	}
	// And the library's answer agrees that the next request must wait: it
	// may admit only once our retry time has passed since the read.
	r, err := lim.Allow(ctx, "nina", redis_rate.PerSecond(10))
	waited := time.Since(read)
	if err != nil {
		t.Fatal(err)
	}
	if r.Allowed != 0 && waited < time.Duration(*k.RetryMillis-20)*time.Millisecond {
		t.Errorf("library allowed %s after the read, while we said retry in %dms", waited.Round(time.Millisecond), *k.RetryMillis)
	}
}

func TestInspectExactKey(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	c.Set(ctx, "rl:fw:{zoe}", 5, time.Minute)
	c.Set(ctx, "plain", "x", 0)
	reg := NewRegistry(Params{})
	in, err := Inspect(ctx, c, reg.All(), "rl:fw:{zoe}")
	if err != nil {
		t.Fatal(err)
	}
	if !in.ExactKey || len(in.Keys) != 1 || in.Keys[0].ID != "zoe" || in.Keys[0].Used == nil || *in.Keys[0].Used != 5 {
		t.Fatalf("inspection %+v", in)
	}
	in, err = Inspect(ctx, c, reg.All(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Keys) != 1 || in.Keys[0].Schema != "" || in.Keys[0].Meaning != "not a known limiter layout" {
		t.Fatalf("plain key: %+v", in.Keys[0])
	}
}

func TestBlendSlidingWindows(t *testing.T) {
	t.Parallel()
	s := ownSchema(ownLayouts[5], Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	if s.Name != "redis-sliding-window" {
		t.Fatal(s.Name)
	}
	// 15 s into window 1000: the previous window still counts 75%.
	now := time.UnixMilli(1000*60000 + 15000)
	cur := &Key{schema: s, parsed: Parsed{Window: 1000}, Used: ptr(int64(4))}
	prev := &Key{schema: s, parsed: Parsed{Window: 999}, Used: ptr(int64(8))}
	blendSlidingWindows([]*Key{prev, cur}, now)
	if want := "; sliding count 10.0 of 10 (current 4 + previous 8 × 75%)"; cur.Meaning != want {
		t.Errorf("meaning %q, want %q", cur.Meaning, want)
	}
	if prev.Meaning != "" {
		t.Errorf("previous window annotated: %q", prev.Meaning)
	}
}
