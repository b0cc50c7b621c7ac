package thirdgw

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// Library names the third-party limiter a Gateway decides with.
type Library string

// The libraries a Gateway can run.
const (
	// RedisRate is go-redis/redis_rate v10: GCRA, keys rate:<id>, burst =
	// the limit.
	RedisRate Library = "redis_rate"
	// Ulule is ulule/limiter v3's Redis store: a fixed window counter,
	// keys limiter:<id>, counting denied requests too.
	Ulule Library = "ulule"
)

// Options configure a Gateway.
type Options struct {
	// Client is the gateway's own Redis client, built by the test with
	// go-redis directly (redis.NewFailoverClient, redis.NewClusterClient).
	Client  redis.UniversalClient
	Library Library
	// Limit requests per Window, per identity.
	Limit  int
	Window time.Duration
	// Header carries the identity; default X-API-Key.
	Header string
	// FailOpen allows a request when Redis fails (200, decided by
	// fail-open); otherwise it is refused with 503 (fail-closed).
	FailOpen bool
	// Timeout bounds one decision's Redis calls; default 200ms.
	Timeout time.Duration
}

// Decision is one decision the gateway made, in its own log.
type Decision struct {
	// Began is when the request reached the handler, At when the limiter
	// answered: the decision was made in Redis between the two.
	Began, At time.Time
	ID        string
	Allowed   bool
	// Status is the HTTP status answered; Err the Redis error, if any.
	Status int
	Err    string
}

// Gateway is a running independent gateway.
type Gateway struct {
	// URL is the gateway's base URL (http://127.0.0.1:port).
	URL  string
	opts Options
	srv  *httptest.Server
	rr   *redis_rate.Limiter
	ul   *limiter.Limiter

	mu  sync.Mutex
	log []Decision
}

// Start serves a gateway on loopback until the test ends.
func Start(t testing.TB, opts Options) *Gateway {
	t.Helper()
	if opts.Client == nil || opts.Limit <= 0 || opts.Window <= 0 {
		t.Fatalf("thirdgw: need a client, a limit and a window")
	}
	if opts.Header == "" {
		opts.Header = "X-API-Key"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 200 * time.Millisecond
	}
	g := &Gateway{opts: opts}
	switch opts.Library {
	case RedisRate:
		g.rr = redis_rate.NewLimiter(opts.Client)
	case Ulule:
		store, err := ulredis.NewStoreWithOptions(opts.Client, limiter.StoreOptions{Prefix: "limiter"})
		if err != nil {
			t.Fatalf("thirdgw: ulule store: %v", err)
		}
		g.ul = limiter.New(store, limiter.Rate{Period: opts.Window, Limit: int64(opts.Limit)})
	default:
		t.Fatalf("thirdgw: unknown library %q", opts.Library)
	}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	g.URL = g.srv.URL
	t.Cleanup(g.srv.Close)
	return g
}

// Log returns a copy of every decision so far, in the order made.
func (g *Gateway) Log() []Decision {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Decision(nil), g.log...)
}

// Allowed counts the decisions for id allowed with At in [from, to).
func (g *Gateway) Allowed(id string, from, to time.Time) int {
	n := 0
	for _, d := range g.Log() {
		if d.ID == id && d.Allowed && !d.At.Before(from) && d.At.Before(to) {
			n++
		}
	}
	return n
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	d := Decision{Began: time.Now(), ID: r.Header.Get(g.opts.Header)}
	if d.ID == "" {
		http.Error(w, "missing "+g.opts.Header, http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.opts.Timeout)
	defer cancel()
	allowed, remaining, retry, err := g.decide(ctx, d.ID)
	d.At = time.Now()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(g.opts.Limit))
	switch {
	case err != nil && g.opts.FailOpen:
		d.Allowed, d.Status = true, http.StatusOK
		h.Set("X-RateLimit-Decided-By", "fail-open")
	case err != nil:
		d.Status = http.StatusServiceUnavailable
		h.Set("X-RateLimit-Decided-By", "fail-closed")
	case allowed:
		d.Allowed, d.Status = true, http.StatusOK
		h.Set("X-RateLimit-Decided-By", "redis")
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	default:
		d.Status = http.StatusTooManyRequests
		h.Set("X-RateLimit-Decided-By", "redis")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(max(retry, time.Second).Seconds()))))
	}
	if err != nil {
		d.Err = err.Error()
	}
	g.mu.Lock()
	g.log = append(g.log, d)
	g.mu.Unlock()
	w.WriteHeader(d.Status)
}

// decide asks the library about one request of id.
func (g *Gateway) decide(ctx context.Context, id string) (allowed bool, remaining int, retry time.Duration, err error) {
	if g.rr != nil {
		lim := redis_rate.Limit{Rate: g.opts.Limit, Burst: g.opts.Limit, Period: g.opts.Window}
		res, err := g.rr.Allow(ctx, id, lim)
		if err != nil {
			return false, 0, 0, err
		}
		return res.Allowed > 0, res.Remaining, res.RetryAfter, nil
	}
	lc, err := g.ul.Get(ctx, id)
	if err != nil {
		return false, 0, 0, err
	}
	return !lc.Reached, int(lc.Remaining), time.Until(time.Unix(lc.Reset, 0)), nil
}
