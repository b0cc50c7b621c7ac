package verify

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/redistest/thirdgw"
	"github.com/rlctl/rlctl/internal/redistest/toxitest"
)

// toxiProxy is the state of one proxy as the API tells it.
type toxiProxy struct {
	Enabled bool `json:"enabled"`
	Toxics  []struct {
		Name string `json:"name"`
	} `json:"toxics"`
}

// redis-down and redis-latency on real gateways go through the Toxiproxy
// in front of their Redis: the gateway (go-redis/redis_rate, failing
// closed) answers 503 while the proxy is down, and once the run is over,
// interrupted or not, every toxic rlctl added is gone and the proxy is
// enabled again.
func TestToxiproxyFaultsOnAnHTTPTarget(t *testing.T) {
	t.Parallel()
	api := toxitest.API(t)
	srv := redistest.Start(t)
	foreign := redistest.SeedForeign(t, srv.Client(t))
	name := "redis-" + strings.ReplaceAll(t.Name(), "/", "-")
	listen := toxitest.NewProxy(t, api, name, srv.Addr)
	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: thirdgw.RedisRate, Limit: 1000, Window: time.Second, Timeout: 200 * time.Millisecond})
	doc := strings.Replace(deploymentScenario(g.URL, srv.URL(), "go-redis-rate", "1000/1s", "2s",
		"  - {at: 400ms, for: 500ms, action: redis-down}\n  - {at: 1200ms, for: 400ms, action: redis-latency, latency: 300ms}\n"),
		"  schema:", fmt.Sprintf("  toxiproxy: {api: %s, proxy: %s}\n  schema:", api, name), 1)
	// The limit is far above the traffic: the claim is the outage seen,
	// not a cap the limiter was never pressed to.
	doc += "thresholds: [errors > 0]\n"
	out, err := Run(t.Context(), parse(t, doc), Options{AllowFaults: true})
	if err != nil {
		t.Fatal(err)
	}
	if errs := measured(t, out, metric.Errors); errs == 0 {
		t.Errorf("no errors while the gateways' Redis was down through Toxiproxy; notes %q", out.Report.Notes)
	}
	slow := 0
	for _, d := range g.Log() {
		if d.Err == "" && d.At.Sub(d.Began) >= 300*time.Millisecond {
			slow++
		}
	}
	if slow == 0 {
		t.Error("no decision took the latency toxic's 300ms")
	}
	var after toxiProxy
	toxitest.Call(t, api, http.MethodGet, "/proxies/"+name, nil, &after)
	if !after.Enabled || len(after.Toxics) != 0 {
		t.Errorf("after the run the proxy is %+v: want it enabled with no toxics", after)
	}

	// Interrupted while the proxy is down (as SIGINT cancels a run), rlctl
	// still takes back what it did.
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(700*time.Millisecond, cancel)
	if _, err := Run(ctx, parse(t, doc), Options{AllowFaults: true}); err == nil && ctx.Err() == nil {
		t.Fatal("the run was not interrupted")
	}
	toxitest.Call(t, api, http.MethodGet, "/proxies/"+name, nil, &after)
	if !after.Enabled || len(after.Toxics) != 0 {
		t.Errorf("after an interrupted run the proxy is %+v: want it enabled with no toxics", after)
	}
	foreign.AssertUnchanged(t, srv.Client(t))
}
