package httptarget

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/scenario"
)

func parseOne(t *testing.T, doc string) *scenario.Scenario {
	t.Helper()
	scs, err := scenario.Parse([]byte(doc), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return scs[0]
}

// An http target's section decodes its fields into its Config and fills
// its defaults; the rest of the target keeps the defaults of every target.
func TestLoadHTTPSection(t *testing.T) {
	t.Parallel()
	scs, err := scenario.Load([]string{"../../scenario/testdata/http.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	got := scs[0].Target
	want := scenario.Target{
		Kind: scenario.KindHTTP, Gateways: 2, Timeout: scenario.DefaultTimeout,
		Endpoints: []scenario.Endpoint{{Name: "default", Share: 1, OnError: design.OnErrorOpen, OnFailover: design.OnFailoverTrust, Timeout: scenario.DefaultTimeout}},
		Config: &Config{
			URLs:   []string{"http://127.0.0.1:8080/a", "http://127.0.0.1:8081/a"},
			Method: "POST", Identity: Identity{Query: "api_key"},
			Headers: map[string]string{"Content-Type": "application/json"},
			Body:    `{"user":"{id}"}`, DeniedStatus: []int{429, 503}, RequestTimeout: DefaultRequestTimeout,
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("target\n got %#v\nwant %#v", got, want)
	}
	if !reflect.DeepEqual(ConfigOf(got), want.Config) {
		t.Errorf("config\n got %#v\nwant %#v", ConfigOf(got), want.Config)
	}
}

// The identity header is a default only when nothing else carries the
// identity: an {id} in a URL, header or body needs no X-API-Key besides.
func TestIdentityDefaultOnlyWithoutTemplates(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]Identity{
		`urls: ["http://gw.example/users/{id}"]`:                                  {},
		"urls: [http://gw.example/]\n  headers: {Authorization: \"Bearer {id}\"}": {},
		"urls: [http://gw.example/]\n  body: '{\"user\":\"{id}\"}'":               {},
		"urls: [http://gw.example/]":                                              {Header: DefaultIDHeader},
		"urls:\n    - http://gw.example/{id}\n  identity: {query: key}":           {Query: "key"},
	} {
		sc := parseOne(t, "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  "+doc+"\ntraffic: {rate: 1/s}\n")
		if got := ConfigOf(sc.Target).Identity; got != want {
			t.Errorf("%s: identity %+v; want %+v", doc, got, want)
		}
	}
}

// TestHTTPRequestTimeout: an http target's requests get request_timeout,
// 5s by default; a file that bounded them with timeout before
// request_timeout existed keeps its bound; a simulated target has no http
// section.
func TestHTTPRequestTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, target     string
		request, timeout string
	}{
		{"default", "{kind: http, urls: [\"http://gw.example/\"]}", "5s", "50ms"},
		{"request_timeout", "{kind: http, urls: [\"http://gw.example/\"], request_timeout: 800ms}", "800ms", "50ms"},
		{"an older file's timeout", "{kind: http, urls: [\"http://gw.example/\"], timeout: 2s}", "2s", "2s"},
		{"simulated", "{algorithm: redis-gcra, timeout: 2s}", "0s", "2s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := parseOne(t, "name: x\nlimit: 10/1s\ntarget: "+tt.target+"\ntraffic: {rate: 10/s}\n")
			if got := ConfigOf(sc.Target).RequestTimeout.String(); got != tt.request {
				t.Errorf("request timeout %s, want %s", got, tt.request)
			}
			if got := sc.Target.Timeout.String(); got != tt.timeout {
				t.Errorf("timeout %s, want %s", got, tt.timeout)
			}
		})
	}
}

// An http target's description goes into every report: its URLs, with no
// password and no query value show_query does not name.
func TestHTTPTargetStringHidesSecrets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ target, want string }{
		{`{kind: http, urls: ["http://u:hunter2@127.0.0.1:8080/", "http://127.0.0.1:8081/"]}`,
			"http ×2 (http://u:xxxxx@127.0.0.1:8080/, http://127.0.0.1:8081/)"},
		{`{kind: http, urls: ["http://gw/v1?pin=1234&page=2&api_key={id}"], show_query: [page]}`,
			"http ×1 (http://gw/v1?pin=xxxxx&page=2&api_key={id})"},
	} {
		got := parseOne(t, "name: x\nlimit: 10/1s\ntarget: "+tt.target+"\ntraffic: {rate: 10/s}\n").Target.String()
		if got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "1234") {
			t.Errorf("secret in %q", got)
		}
	}
}

// A field of the http section on another kind's target is refused,
// naming the kind it belongs to.
func TestHTTPFieldsOnOtherKinds(t *testing.T) {
	t.Parallel()
	_, err := scenario.Parse([]byte("name: x\nlimit: 1/s\ntarget: {algorithm: redis-gcra, urls: [\"http://gw/\"]}\ntraffic: {rate: 1/s}\n"), "x.yaml")
	if err == nil || !strings.Contains(err.Error(), "x.yaml:3: target.urls: applies to http targets only, not simulated") {
		t.Fatalf("err %v", err)
	}
}
