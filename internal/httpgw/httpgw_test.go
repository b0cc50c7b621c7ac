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

	"github.com/dunglas/httpsfv"
	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

func newSet(t *testing.T, addr string, onError string) *gateway.Set {
	t.Helper()
	set, err := gateway.New(context.Background(), gateway.Options{
		N: 2,
		Limiter: limiter.Config{Algorithm: design.RedisFixedWindow,
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
		// Draft 11 by default: both fields are Structured Field lists
		// naming the endpoint's policy.
		policy := parseList(t, resp.Header, "RateLimit-Policy")
		if len(policy) != 1 || policy[0].name != "default" || policy[0].params["q"] != 5 || policy[0].params["w"] != 60 {
			t.Errorf("request %d: RateLimit-Policy %+v, want \"default\";q=5;w=60", i, policy)
		}
		limit := parseList(t, resp.Header, "RateLimit")
		if len(limit) != 1 || limit[0].name != "default" {
			t.Fatalf("request %d: RateLimit %+v, want one item for policy default", i, limit)
		}
		r, tt := limit[0].params["r"], limit[0].params["t"]
		if resp.Header.Get("RateLimit-Remaining") != "" || resp.Header.Get("RateLimit-Limit") != "" {
			t.Errorf("request %d: draft-06 fields sent beside draft 11: %v", i, resp.Header)
		}
		switch resp.StatusCode {
		case http.StatusOK:
			allowed++
			if r != int64(5-allowed) || tt < 1 || tt > 60 {
				t.Errorf("request %d: RateLimit r=%d t=%d, want r=%d and t within the minute", i, r, tt, 5-allowed)
			}
		case http.StatusTooManyRequests:
			denied++
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			// Up to 61: the window's key outlives its PTTL by up to 1 ms
			// (Redis counts whole milliseconds), which rounds up.
			if err != nil || ra < 1 || ra > 61 {
				t.Errorf("request %d: Retry-After %q, want 1..61 seconds", i, resp.Header.Get("Retry-After"))
			}
			// The effective window of a denial ends when the next request
			// can pass: Retry-After, never later (draft 11 section 6).
			if r != 0 || tt != int64(ra) {
				t.Errorf("request %d: denied with RateLimit r=%d t=%d, want r=0 t=%d (Retry-After)", i, r, tt, ra)
			}
		default:
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
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

// sfItem is one item of a Structured Field list as these tests check it:
// its String name and its Integer parameters.
type sfItem struct {
	name   string
	params map[string]int64
}

// parseList parses header field name as an RFC 9651 List of Items whose
// values are Strings and whose parameters are Integers (or Strings and Byte
// Sequences, skipped), failing the test on anything else.
func parseList(t *testing.T, h http.Header, name string) []sfItem {
	t.Helper()
	l, err := httpsfv.UnmarshalList(h.Values(name))
	if err != nil {
		t.Fatalf("%s %q is not a Structured Field list: %v", name, h.Values(name), err)
	}
	var out []sfItem
	for _, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok {
			t.Fatalf("%s %q holds an inner list", name, h.Values(name))
		}
		s, ok := it.Value.(string)
		if !ok {
			t.Fatalf("%s %q: item value %#v is not a String", name, h.Values(name), it.Value)
		}
		item := sfItem{name: s, params: map[string]int64{}}
		for _, k := range it.Params.Names() {
			v, _ := it.Params.Get(k)
			switch v := v.(type) {
			case int64:
				item.params[k] = v
			case string, []byte:
			default:
				t.Fatalf("%s %q: parameter %s is %T, not an Integer", name, h.Values(name), k, v)
			}
		}
		out = append(out, item)
	}
	return out
}

// shape is a field's structure: per item, its parameter names and the
// Go type httpsfv decoded each value to.
func shape(t *testing.T, field string) []map[string]string {
	t.Helper()
	l, err := httpsfv.UnmarshalList([]string{field})
	if err != nil {
		t.Fatalf("%q: %v", field, err)
	}
	var out []map[string]string
	for _, m := range l {
		it := m.(httpsfv.Item)
		s := map[string]string{"": fmtType(it.Value)}
		for _, k := range it.Params.Names() {
			v, _ := it.Params.Get(k)
			s[k] = fmtType(v)
		}
		out = append(out, s)
	}
	return out
}

func fmtType(v any) string {
	switch v.(type) {
	case int64:
		return "Integer"
	case string:
		return "String"
	case httpsfv.Token:
		return "Token"
	case []byte:
		return "Byte Sequence"
	}
	return "other"
}

// The gateway's draft-11 fields parse, with a Structured Fields parser, to
// the same structure as the draft's own examples (sections 3.2, 4.2 and
// appendix B): a List of Items, each a String naming a policy with Integer
// q and w, or Integer r and t. Each endpoint names its own policy.
func TestGatewayFieldsMatchDraft11Examples(t *testing.T) {
	srv := redistest.Start(t)
	set, err := gateway.New(context.Background(), gateway.Options{
		N: 1,
		Limiter: limiter.Config{Algorithm: design.RedisFixedWindow,
			Limit: rate.Limit{Count: 2, Window: 10 * time.Second}, Prefix: "rl:"},
		Endpoints: []gateway.Endpoint{
			{Name: "login", Share: 0.5, Policy: limiter.Policy{OnError: "closed", Timeout: time.Second, OnFailover: "trust"}},
			{Name: "feed", Share: 0.5, Policy: limiter.Policy{OnError: "open", Timeout: time.Second, OnFailover: "trust"}},
		},
		NewClient: func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	o := Options{Decider: set, Limit: rate.Limit{Count: 2, Window: 10 * time.Second}, Policies: []string{"auth"}}
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(Handler(o, NewMetrics(o), 0))
	defer gw.Close()

	examplePolicy := shape(t, `"default";q=100;w=10`)[0]
	exampleLimit := shape(t, `"default";r=50;t=30`)[0]
	for _, ep := range []struct{ path, policy string }{{"/login", "auth"}, {"/feed", "feed"}} {
		var last *http.Response
		for range 3 {
			last = get(t, gw.URL+ep.path, "carol")
			got := shape(t, last.Header.Get("RateLimit-Policy"))
			if len(got) != 1 || !sameShape(got[0], examplePolicy) {
				t.Errorf("%s: RateLimit-Policy %q has shape %v, the draft's example %v", ep.path, last.Header.Get("RateLimit-Policy"), got, examplePolicy)
			}
			got = shape(t, last.Header.Get("RateLimit"))
			if len(got) != 1 || !sameShape(got[0], exampleLimit) {
				t.Errorf("%s: RateLimit %q has shape %v, the draft's example %v", ep.path, last.Header.Get("RateLimit"), got, exampleLimit)
			}
			if p := parseList(t, last.Header, "RateLimit"); p[0].name != ep.policy {
				t.Errorf("%s: RateLimit names policy %q, want %q", ep.path, p[0].name, ep.policy)
			}
		}
		// The third request of a 2 per 10s policy is denied: the draft's
		// B.1.4 throttled answer, r=0 with t no later than Retry-After.
		if last.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%s: third request got %d, want 429", ep.path, last.StatusCode)
		}
		l := parseList(t, last.Header, "RateLimit")[0]
		if ra, _ := strconv.ParseInt(last.Header.Get("Retry-After"), 10, 64); l.params["r"] != 0 || l.params["t"] < 1 || l.params["t"] > ra {
			t.Errorf("%s: denial says RateLimit %+v with Retry-After %d", ep.path, l, ra)
		}
	}

	bad := Options{Decider: set, Limit: o.Limit, Policies: []string{"caf\u00e9"}}
	if err := bad.Check(); err == nil {
		t.Error("a policy name a Structured Field String cannot carry was accepted")
	}
}

// sameShape reports whether two items have the same value type and the
// same parameters of the same types.
func sameShape(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Older clients get the draft-06 shape behind the flag: RateLimit-Limit,
// -Remaining, -Reset and the policy as "5;w=60", no RateLimit field.
func TestGatewayDraft06Fields(t *testing.T) {
	srv := redistest.Start(t)
	set := newSet(t, srv.Addr, "closed")
	o := Options{Decider: set, Limit: rate.Limit{Count: 5, Window: time.Minute}, Fields: FieldsDraft06}
	gw := httptest.NewServer(Handler(o, NewMetrics(o), 0))
	defer gw.Close()
	resp := get(t, gw.URL, "dave")
	h := resp.Header
	if h.Get("RateLimit-Policy") != "5;w=60" || h.Get("RateLimit-Limit") != "5" || h.Get("RateLimit-Remaining") != "4" {
		t.Errorf("draft-06 fields %v", h)
	}
	if reset, err := strconv.Atoi(h.Get("RateLimit-Reset")); err != nil || reset < 1 || reset > 60 {
		t.Errorf("RateLimit-Reset %q", h.Get("RateLimit-Reset"))
	}
	if h.Get("RateLimit") != "" {
		t.Errorf("draft-06 shape also sent RateLimit %q", h.Get("RateLimit"))
	}
	if err := (Options{Decider: set, Fields: "draft-99"}).Check(); err == nil {
		t.Error("unknown fields shape accepted")
	}
}
