package httpgw

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

func newSet(t *testing.T, addr string, onError string) *gateway.Set {
	t.Helper()
	set, err := gateway.New(context.Background(), gateway.Options{
		N: 2,
		Limiter: limiter.Config{Algorithm: limiter.RedisFixedWindow,
			Limit: rate.Limit{Count: 5, Window: time.Minute}, Prefix: "rl:"},
		Endpoints: []gateway.Endpoint{{Name: "default", Share: 1,
			Policy: limiter.Policy{OnError: onError, Timeout: 200 * time.Millisecond, OnFailover: "trust"}}},
		NewClient: func() redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1,
				DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

func get(t *testing.T, url, id string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if id != "" {
		req.Header.Set("X-API-Key", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestGatewayAnswersWithLimitHeaders(t *testing.T) {
	srv := redistest.Start(t)
	set := newSet(t, srv.Addr, "closed")
	o := Options{Decider: set, Limit: rate.Limit{Count: 5, Window: time.Minute}}
	m := NewMetrics(o)
	gw0 := httptest.NewServer(Handler(o, m, 0))
	defer gw0.Close()
	gw1 := httptest.NewServer(Handler(o, m, 1))
	defer gw1.Close()

	allowed, denied := 0, 0
	for i := 0; i < 8; i++ {
		url := gw0.URL
		if i%2 == 1 {
			url = gw1.URL // both gateways share the Redis counter
		}
		resp := get(t, url, "alice")
		switch resp.StatusCode {
		case http.StatusOK:
			allowed++
			if got := resp.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(5-allowed) {
				t.Errorf("request %d: RateLimit-Remaining %q, want %d", i, got, 5-allowed)
			}
		case http.StatusTooManyRequests:
			denied++
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || ra < 1 || ra > 60 {
				t.Errorf("request %d: Retry-After %q, want 1..60 seconds", i, resp.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		if resp.Header.Get("RateLimit-Policy") != "5;w=60" {
			t.Errorf("RateLimit-Policy %q", resp.Header.Get("RateLimit-Policy"))
		}
	}
	if allowed != 5 || denied != 3 {
		t.Errorf("allowed %d denied %d through two gateways; want 5 and 3", allowed, denied)
	}
	if resp := get(t, gw0.URL, ""); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no identity: status %d, want 400", resp.StatusCode)
	}

	mx := httptest.NewServer(m.Handler())
	defer mx.Close()
	resp, err := http.Get(mx.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`rlctl_gateway_requests_total{by="redis",endpoint="default",gateway="0",outcome="allowed"} 3`,
		`rlctl_gateway_requests_total{by="redis",endpoint="default",gateway="1",outcome="allowed"} 2`,
		`rlctl_gateway_decision_seconds_count{endpoint="default"} 8`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestGatewayFailsClosedWhenRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	set := newSet(t, srv.Addr, "closed")
	o := Options{Decider: set, Limit: rate.Limit{Count: 5, Window: time.Minute}}
	gw := httptest.NewServer(Handler(o, NewMetrics(o), 0))
	defer gw.Close()
	srv.Stop()
	start := time.Now()
	resp := get(t, gw.URL, "bob")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("X-RateLimit-Decided-By") != "fail-closed" {
		t.Errorf("Redis down: status %d decided by %q; want 429 fail-closed", resp.StatusCode, resp.Header.Get("X-RateLimit-Decided-By"))
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("decision took %v with a 200ms timeout", el)
	}
}

func TestRulesNameEveryMetric(t *testing.T) {
	var b strings.Builder
	if err := Rules(&b, RulesOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"rlctl_gateway_requests_total", "rlctl_gateway_decision_seconds_bucket",
		"rlctl_gateway_decision_errors_total", "rlctl_gateway_lease_stranded", `by="fail-open"`, "for: 5m", "> 0.05"} {
		if !strings.Contains(b.String(), m) {
			t.Errorf("rules lack %s:\n%s", m, b.String())
		}
	}
}
