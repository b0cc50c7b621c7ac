package discover

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	ulule "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/target/httptarget"
)

// redisRateServer serves go-redis/redis_rate (GCRA) on srv behind a small
// net/http handler, keyed on X-API-Key, answering 429 with Retry-After in
// whole seconds (rounded up) as its README shows.
func redisRateServer(t *testing.T, srv string, l redis_rate.Limit) string {
	lim := redis_rate.NewLimiter(redisClient(t, srv))
	return handlerServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := lim.Allow(r.Context(), "discover:"+r.Header.Get("X-API-Key"), l)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
		if res.Allowed == 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(res.RetryAfter.Seconds()))))
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
}

// TestDiscoverRedisRate discovers go-redis/redis_rate's GCRA: a token
// bucket of rate 10/s and burst 20.
func TestDiscoverRedisRate(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	url := redisRateServer(t, srv.Addr, redis_rate.Limit{Rate: 10, Burst: 20, Period: time.Second})
	res := discoverURLs(t, 300, url)
	check(t, res, want{class: TokenBucket, rate: 10, burst: 20, aligned: AlignNone})
}

// TestDiscoverUlule discovers ulule/limiter/v3 (its Redis store and its
// net/http middleware): a fixed window of 12 per second, opened by an
// identity's first request. Its counter counts denied requests too, but
// the window still ends on time, so denials do not lock a client out.
func TestDiscoverUlule(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	store, err := ulredis.NewStoreWithOptions(redisClient(t, srv.Addr), ulule.StoreOptions{Prefix: "discover-ulule"})
	if err != nil {
		t.Fatal(err)
	}
	mw := stdlib.NewMiddleware(ulule.New(store, ulule.Rate{Period: time.Second, Limit: 12}),
		stdlib.WithKeyGetter(func(r *http.Request) string { return r.Header.Get("X-API-Key") }))
	url := handlerServer(t, mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	res := discoverURLs(t, 300, url)
	check(t, res, want{class: FixedWindow, limit: 12, window: time.Second, aligned: AlignFirstRequest})
	if res.Policy.RetryAfter != RetryMissing {
		t.Errorf("retry_after %q, want missing (ulule sends X-RateLimit-Reset only)", res.Policy.RetryAfter)
	}
	if r := res.Policy.RemainingExact; r == nil || !*r {
		t.Errorf("remaining_exact %v, want true: %s", r, res.Policy.Evidence["remaining_exact"].Evidence)
	}
	if len(res.Policy.HeaderForms) != 1 || res.Policy.HeaderForms[0] != "x-ratelimit" {
		t.Errorf("header forms %v, want [x-ratelimit]", res.Policy.HeaderForms)
	}
}

// TestDiscoverSharedGateways: two of rlctl's gateways on one Redis share
// the limit; two running a design kept in each gateway's memory do not,
// so the deployment admits twice the quota.
func TestDiscoverSharedGateways(t *testing.T) {
	eachSharing(t, "rl:shared-", func(t *testing.T, urls []string, shared bool) {
		res := discoverURLs(t, 300, urls...)
		if res.Policy.Shared == nil || *res.Policy.Shared != shared {
			t.Errorf("shared %s, want %v: %s", fmtBool(res.Policy.Shared), shared, res.Policy.Evidence["shared"].Evidence)
		}
	})
}

// eachSharing runs check, in parallel subtests, on two of rlctl's gateways
// that share one limit in Redis and on two that each keep their own.
func eachSharing(t *testing.T, prefix string, check func(t *testing.T, urls []string, shared bool)) {
	srv := startRedis(t)
	for _, tc := range []struct {
		algorithm string
		shared    bool
	}{
		{design.RedisFixedWindow, true},
		{design.LocalFixedWindow, false},
	} {
		t.Run(tc.algorithm, func(t *testing.T) {
			t.Parallel()
			check(t, gatewayOf(t, srv.Addr, limiter.Config{Algorithm: tc.algorithm, Limit: lim(10, time.Second), Prefix: prefix + tc.algorithm + ":"}, 2), tc.shared)
		})
	}
}

// A run of slow answers ends a burst early (it is how a queue shows), so
// the sharing check's drain of URL 1 once stopped at 6 of a shared 10 on
// a loaded machine, and URL 2, admitting from what was left, read as a
// limit of its own. Here URL 1's third to sixth answers come 40ms late.
func TestDiscoverSharedThroughAStall(t *testing.T) {
	eachSharing(t, "rl:stall-", func(t *testing.T, urls []string, shared bool) {
		tg, err := httptarget.New(httptarget.Options{URLs: urls, IdentityHeader: "X-API-Key", Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()
		c := &counting{Target: tg, per: map[string]int{}, before: func(n int) {
			if n >= 3 && n <= 6 {
				time.Sleep(40 * time.Millisecond)
			}
		}}
		e := newEngine(Options{Target: c, Budget: 300, MaxIdentities: DefaultMaxIdentities, MaxDuration: 20 * time.Second})
		e.res.Found = true
		e.res.Policy.Algorithm, e.res.Policy.Limit = FixedWindow, 10
		if err := e.shared(context.Background()); err != nil {
			t.Fatal(err)
		}
		if p := e.res.Policy; p.Shared == nil || *p.Shared != shared {
			t.Errorf("shared %s, want %v: %s (notes %q)", fmtBool(p.Shared), shared, p.Evidence["shared"].Evidence, e.res.Notes)
		}
	})
}

// fmtBool is a judged bool, or "not judged".
func fmtBool(b *bool) string {
	if b == nil {
		return "not judged"
	}
	return strconv.FormatBool(*b)
}
