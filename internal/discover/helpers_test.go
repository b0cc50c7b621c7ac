package discover

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/httpgw"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/target/httptarget"
	"github.com/rlctl/rlctl/internal/traffic"
)

// counting wraps a target and counts, by identity name, the requests that
// really went out: what the budget assertion reads.
// When before is set, it is called with each request's ordinal in the
// run (from 1) before the request goes out: a test holds one back there.
type counting struct {
	traffic.Target
	mu     sync.Mutex
	per    map[string]int
	n      int
	before func(n int)
	// request, when set, sees every request before it is made.
	request func(r traffic.Request)
	// answer, when set, sees every answer and returns what discover gets.
	answer func(r traffic.Request, resp traffic.Response) traffic.Response
	// after, when set, is told how long the nth request took, as
	// discover saw it (before's wait included).
	after func(n int, took time.Duration)
}

// Warm passes a warm-up on to the target: it sends no request.
func (c *counting) Warm(ctx context.Context, n int) error {
	if w, ok := c.Target.(traffic.Warmer); ok {
		return w.Warm(ctx, n)
	}
	return nil
}

func (c *counting) Do(ctx context.Context, r traffic.Request) traffic.Response {
	c.mu.Lock()
	c.per[r.ID]++
	c.n++
	n := c.n
	c.mu.Unlock()
	if c.after != nil {
		start := time.Now()
		defer func() { c.after(n, time.Since(start)) }()
	}
	if c.before != nil {
		c.before(n)
	}
	if c.request != nil {
		c.request(r)
	}
	resp := c.Target.Do(ctx, r)
	if c.answer != nil {
		resp = c.answer(r, resp)
	}
	return resp
}

func (c *counting) Probe(ctx context.Context) error {
	return c.Target.(traffic.Prober).Probe(ctx)
}

// discoverURLs runs discover on urls (identity in X-API-Key) and fails
// the test when any identity was sent more than the budget.
func discoverURLs(t *testing.T, budget int, urls ...string) *Result {
	t.Helper()
	return discoverHeld(t, budget, nil, urls...)
}

// discoverHeld is discoverURLs with before called ahead of each request
// (see counting).
func discoverHeld(t *testing.T, budget int, before func(n int), urls ...string) *Result {
	t.Helper()
	return discoverLogged(t, budget, &counting{before: before}, urls...)
}

// discoverLogged is discoverWithin, logging what it found.
func discoverLogged(t *testing.T, budget int, c *counting, urls ...string) *Result {
	t.Helper()
	res := discoverWithin(t, budget, c, urls...)
	t.Logf("%s (%d requests, %v): %+v", res.Summary, res.Requests, time.Duration(res.DurationMS)*time.Millisecond, res.Policy)
	for k, f := range res.Policy.Evidence {
		t.Logf("  %s (%.2f): %s", k, f.Confidence, f.Evidence)
	}
	for _, n := range res.Notes {
		t.Logf("  note: %s", n)
	}
	return res
}

// discoverQuiet runs discover on urls and reports whether any identity
// was sent more than the budget, counting what really went out; it
// returns nil (having logged why) when the run failed.
func discoverQuiet(t *testing.T, budget int, urls ...string) (*Result, bool) {
	t.Helper()
	return discoverWith(t, budget, nil, urls...)
}

func discoverWith(t *testing.T, budget int, before func(n int), urls ...string) (*Result, bool) {
	t.Helper()
	return discoverThrough(t, budget, &counting{before: before}, urls...)
}

// discoverWithin is discoverThrough that stops the test when discover
// failed, and fails it when an identity was sent more than budget.
func discoverWithin(t *testing.T, budget int, c *counting, urls ...string) *Result {
	t.Helper()
	res, over := discoverThrough(t, budget, c, urls...)
	if res == nil {
		t.FailNow()
	}
	if over {
		t.Errorf("an identity was sent more than the budget of %d", budget)
	}
	return res
}

// discoverCalm is discoverWithin through a fresh counting from newC, run
// again, three times in all (calmtest.Retry), when off says its result is
// one a stall of the server in this binary explains and the test binary
// stalled past 5ms meanwhile (calmtest.Watch). A wrong result on a calm
// machine stands.
func discoverCalm(t *testing.T, budget int, newC func() *counting, url string, off func(*Result) string) *Result {
	t.Helper()
	const calm = 5 * time.Millisecond
	var res *Result
	calmtest.Retry(t, 3, func(int) string {
		watch := calmtest.Watch()
		res = discoverWithin(t, budget, newC(), url)
		if stalled := watch(); stalled > calm {
			if why := off(res); why != "" {
				return fmt.Sprintf("%s while the test binary stalled %v (a busy machine)", why, stalled)
			}
		}
		return ""
	})
	return res
}

// discoverThrough is discoverWith through c's hooks.
func discoverThrough(t *testing.T, budget int, c *counting, urls ...string) (*Result, bool) {
	t.Helper()
	tg, err := httptarget.New(httptarget.Options{URLs: urls, IdentityHeader: "X-API-Key", Timeout: 5 * time.Second})
	if err != nil {
		t.Error(err)
		return nil, false
	}
	defer tg.Close()
	c.Target, c.per = tg, map[string]int{}
	res, err := Run(context.Background(), Options{Target: c, Budget: budget, MaxDuration: 40 * time.Second})
	if err != nil {
		t.Errorf("discover: %v", err)
		return nil, false
	}
	total, over := 0, false
	for _, n := range c.per {
		over = over || n > budget
		total += n
	}
	if total != res.Requests {
		t.Errorf("the result counts %d requests, %d were sent", res.Requests, total)
	}
	return res, over
}

// gatewayOf starts n of rlctl's own HTTP gateways (httpgw) running cfg
// on the redis-server at addr, one httptest server each, and returns
// their URLs.
func gatewayOf(t *testing.T, addr string, cfg limiter.Config, n int) []string {
	t.Helper()
	return gatewayN(t, addr, cfg, n, "")
}

// gatewayFields is one gateway answering with the given header fields.
func gatewayFields(t *testing.T, addr string, cfg limiter.Config, fields string) []string {
	t.Helper()
	return gatewayN(t, addr, cfg, 1, fields)
}

func gatewayN(t *testing.T, addr string, cfg limiter.Config, n int, fields string) []string {
	t.Helper()
	set, err := gateway.New(context.Background(), gateway.Options{
		N: n, Limiter: cfg,
		Endpoints: []gateway.Endpoint{{Name: "default", Share: 1,
			Policy: limiter.Policy{OnError: "closed", Timeout: 2 * time.Second, OnFailover: "trust"}}},
		NewClient: func() redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	o := httpgw.Options{Decider: set, Limit: cfg.Limit, Fields: fields}
	m := httpgw.NewMetrics(o)
	var urls []string
	for i := range n {
		s := httptest.NewServer(httpgw.Handler(o, m, i))
		t.Cleanup(s.Close)
		urls = append(urls, s.URL+"/")
	}
	return urls
}

// startRedis starts a redis-server for the test.
func startRedis(t *testing.T) *redistest.Server { return redistest.Start(t) }

// handlerServer serves h on a loopback httptest server.
func handlerServer(t *testing.T, h http.Handler) string {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL + "/"
}

// within reports whether got is within 10% of want.
func within(got, want float64) bool {
	return got >= 0.9*want && got <= 1.1*want
}

// lim is a limit of n per w.
func lim(n int64, w time.Duration) rate.Limit { return rate.Limit{Count: n, Window: w} }

// redisClient is a client of the redis-server at addr, closed when the
// test ends.
func redisClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}
