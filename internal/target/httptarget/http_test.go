package httptarget

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/traffic"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
	"github.com/rlctl/rlctl/internal/workload"
)

// limitServer is a real HTTP gateway with a small fixed-window limiter: 429
// with Retry-After and the draft RateLimit fields when an identity is over
// its limit. It remembers what each request carried.
type limitServer struct {
	limit  int64
	window time.Duration
	idFrom func(*http.Request) string

	mu      sync.Mutex
	windows map[string]*fixedWin
	seen    map[string]int // identity → requests
	paths   map[string]int
	bodies  []string
	traces  []string
}

func newLimitServer(t *testing.T, limit int64, window time.Duration, idFrom func(*http.Request) string) (*limitServer, *httptest.Server) {
	s := &limitServer{limit: limit, window: window, idFrom: idFrom,
		windows: map[string]*fixedWin{}, seen: map[string]int{}, paths: map[string]int{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *limitServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := s.idFrom(r)
	now := time.Now()
	s.mu.Lock()
	s.seen[id]++
	s.paths[r.URL.Path]++
	s.bodies = append(s.bodies, string(body))
	s.traces = append(s.traces, r.Header.Get("X-Trace"))
	win := s.windows[id]
	if win == nil || !now.Before(win.start.Add(s.window)) {
		win = &fixedWin{start: now}
		s.windows[id] = win
	}
	reset := win.start.Add(s.window).Sub(now)
	allowed := win.count < s.limit
	if allowed {
		win.count++
	}
	remaining := s.limit - win.count
	s.mu.Unlock()

	secs := strconv.FormatInt(int64((reset+time.Second-1)/time.Second), 10)
	w.Header().Set("RateLimit-Limit", strconv.FormatInt(s.limit, 10))
	w.Header().Set("RateLimit-Remaining", strconv.FormatInt(remaining, 10))
	w.Header().Set("RateLimit-Reset", secs)
	if !allowed {
		w.Header().Set("Retry-After", secs)
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "slow down\n")
		return
	}
	io.WriteString(w, strings.Repeat("ok", 100))
}

func TestHTTPTargetHeaderIdentity(t *testing.T) {
	t.Parallel()
	s, srv := newLimitServer(t, 5, time.Hour, func(r *http.Request) string { return r.Header.Get("X-API-Key") })
	tgt, err := New(Options{URLs: []string{srv.URL + "/a", srv.URL + "/b"}, IdentityHeader: "x-api-key"})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	plan := traffic.Plan{Rate: perSecond(200), Duration: 300 * time.Millisecond, MaxRequests: 1000, Identities: 2}
	seen := &errorsSeen{Target: tgt}
	h, err := traffic.Run(context.Background(), seen, plan, traffic.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := traffictest.Counts(h)
	if h.Len() != 60 || c[decision.Allowed] != 10 || c[decision.Denied] != 50 {
		t.Fatalf("%d records, outcomes %v; want 60: 10 allowed, 50 denied (errors: %v)", h.Len(), c, seen)
	}
	for i := range h.Len() {
		r := h.At(i)
		if r.Outcome == decision.Denied && (r.RetryAfter < 59*time.Minute || r.RetryAfter > time.Hour) {
			t.Fatalf("denied record %d: retry-after %v; want the server's ~1h", i, r.RetryAfter)
		}
		if r.Outcome == decision.Allowed && r.RetryAfter != -1 {
			t.Fatalf("allowed record %d carries retry-after %v", i, r.RetryAfter)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen["user-0"] != 30 || s.seen["user-1"] != 30 || len(s.seen) != 2 {
		t.Fatalf("server saw identities %v; want user-0 and user-1, 30 each", s.seen)
	}
	if s.paths["/a"] != 30 || s.paths["/b"] != 30 {
		t.Fatalf("server saw paths %v; want both gateways used evenly", s.paths)
	}
}

func TestHTTPTargetQueryIdentityBodyAndHeaders(t *testing.T) {
	t.Parallel()
	s, srv := newLimitServer(t, 100, time.Hour, func(r *http.Request) string { return r.URL.Query().Get("api_key") })
	tgt, err := New(Options{
		URLs: []string{srv.URL + "/check?v=1"}, Method: "post", IdentityQuery: "api_key",
		Headers: map[string]string{"x-trace": "t-{id}"},
		Body:    `{"descriptors":[{"key":"user","value":"{id}"}]}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	plan := traffic.Plan{Rate: perSecond(100), Duration: 100 * time.Millisecond, MaxRequests: 1000,
		IdentityNames: []string{"alice", "bob&co"}}
	h, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := traffictest.Counts(h); c[decision.Allowed] != 10 {
		t.Fatalf("outcomes %v; want 10 allowed", c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen["alice"] != 5 || s.seen["bob&co"] != 5 {
		t.Fatalf("server saw %v; the query parameter must carry (escaped) identities", s.seen)
	}
	for i, b := range s.bodies {
		tr := s.traces[i]
		id := strings.TrimPrefix(tr, "t-")
		if tr == "" || b != `{"descriptors":[{"key":"user","value":"`+id+`"}]}` {
			t.Fatalf("request %d: body %q, trace %q; templates not filled", i, b, tr)
		}
	}
}

func TestHTTPTargetStatuses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("id"))
		if code == 302 {
			w.Header().Set("Location", "/elsewhere")
		}
		if code == 503 {
			w.Header().Set("Retry-After", "4")
		}
		if code == 204 {
			w.Header().Set("X-RateLimit-Decided-By", "fail-open")
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	tgt, err := New(Options{URLs: []string{srv.URL}, IdentityQuery: "id", DeniedStatus: []int{429, 503}})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	tests := []struct {
		status string
		want   decision.Outcome
		retry  time.Duration
		by     decision.By
	}{
		{"200", decision.Allowed, -1, decision.ByUnknown},
		{"204", decision.Allowed, -1, decision.ByFailOpen},
		// A redirect is neither: rlctl follows none, and the limiter may
		// have counted it.
		{"302", decision.Error, -1, decision.ByUnanswered},
		{"429", decision.Denied, -1, decision.ByUnknown},
		{"503", decision.Denied, 4 * time.Second, decision.ByUnknown},
		// An error answer may follow an admission (the upstream failed).
		{"404", decision.Error, -1, decision.ByUnanswered},
		{"500", decision.Error, -1, decision.ByUnanswered},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			resp := tgt.Do(context.Background(), traffic.Request{ID: tt.status})
			if resp.Outcome != tt.want || resp.RetryAfter != tt.retry || resp.By != tt.by {
				t.Fatalf("status %s: outcome %v retry %v by %v (err %v); want %v, %v, %v", tt.status, resp.Outcome, resp.RetryAfter, resp.By, resp.Err, tt.want, tt.retry, tt.by)
			}
			if (tt.want == decision.Error) != (resp.Err != nil) {
				t.Fatalf("status %s: err %v", tt.status, resp.Err)
			}
			if got := strconv.Itoa(resp.Status); got != tt.status {
				t.Fatalf("status %s recorded as %s", tt.status, got)
			}
		})
	}
	// A closed port is a transport error.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	tgt2, err := New(Options{URLs: []string{deadURL}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// It was never sent, so no limiter counted it: not "unanswered".
	if resp := tgt2.Do(context.Background(), traffic.Request{ID: "x"}); resp.Outcome != decision.Error || resp.Err == nil || resp.By != decision.ByUnknown {
		t.Fatalf("refused connection gave %+v", resp)
	}
	// The same over net/http (a URL with user info takes it).
	u, _ := url.Parse(deadURL)
	u.User = url.UserPassword("u", "p")
	tgt3, err := New(Options{URLs: []string{u.String()}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if tgt3.(*httpTarget).fast != nil {
		t.Fatal("a URL with user info took the fast client")
	}
	if resp := tgt3.Do(context.Background(), traffic.Request{ID: "x"}); resp.Outcome != decision.Error || resp.By != decision.ByUnknown {
		t.Fatalf("refused connection over net/http gave %+v", resp)
	}
}

func TestHTTPTargetThatStopsAnswering(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	// Silent until the test ends, and silent once the client has gone too
	// (see TestTimeoutNamesItsField).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			panic(http.ErrAbortHandler)
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	tgt, err := New(Options{URLs: []string{srv.URL}, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	plan := traffic.Plan{Rate: perSecond(50), Duration: 300 * time.Millisecond, MaxRequests: 1000}
	began := time.Now()
	h, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := traffictest.Counts(h); h.Len() != 15 || c[decision.Error] != 15 {
		t.Fatalf("%d records, outcomes %v; want 15 errors", h.Len(), c)
	}
	// The gateway had each request when it went silent: any may have
	// been admitted.
	for i := range h.Len() {
		if h.By(i) != decision.ByUnanswered {
			t.Fatalf("record %d: by %v; want unanswered", i, h.By(i))
		}
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("run took %v against a silent target", took)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    Options
	}{
		{"no urls", Options{}},
		{"bad scheme", Options{URLs: []string{"ftp://127.0.0.1/"}}},
		{"no host", Options{URLs: []string{"http:///x"}}},
		{"header and query", Options{URLs: []string{"http://127.0.0.1/"}, IdentityHeader: "a", IdentityQuery: "b"}},
		{"bad status", Options{URLs: []string{"http://127.0.0.1/"}, DeniedStatus: []int{42}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.o); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	_, err := New(Options{URLs: []string{"http://user:s3cret@127.0.0.1:1/%zz"}})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v; want an error without the password", err)
	}
	tgt, err := New(Options{URLs: []string{"http://user:s3cret@127.0.0.1:1/"}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if g := tgt.Gateways()[0]; strings.Contains(g, "s3cret") {
		t.Fatalf("gateway name %q shows the password", g)
	}
	if resp := tgt.Do(context.Background(), traffic.Request{ID: "x"}); resp.Err == nil || strings.Contains(resp.Err.Error(), "s3cret") {
		t.Fatalf("error %v shows the password", resp.Err)
	}
}

func TestBoundaryAutoOverHTTP(t *testing.T) {
	t.Parallel()
	// The server's windows open at an identity's first request and its
	// headers say when they reset (in whole seconds, as the drafts do):
	// too coarse to aim shots at a 1s window's edge, so the first edge is
	// learned from the answers, which takes a window or so more (three
	// more, where the edge learned falls on an epoch multiple and the
	// learning must tell the alignments apart).
	_, srv := newLimitServer(t, 5, time.Second, func(r *http.Request) string { return r.Header.Get("X-API-Key") })
	tgt, err := New(Options{URLs: []string{srv.URL}, IdentityHeader: "X-API-Key"})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	plan := traffic.Plan{Pattern: workload.PatternBoundary, Align: workload.AlignAuto, Limit: perSecond(5), Identities: 2,
		Duration: 7 * time.Second, MaxRequests: 10000}
	// A run in which no boundary batch left on time, or an edge was
	// learned less precisely than the shots' span (the machine stalled),
	// measures no burst: it is run again, and three such runs fail.
	busy := calmtest.Retry(t, 3, func(int) string {
		h, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		allowed, onTime, _ := traffictest.BoundaryShape(t, h, 2, 5)
		if len(h.Meta.Boundaries) < 2 {
			t.Fatalf("boundaries %v; want at least 2 in %v", h.Meta.Boundaries, plan.Duration)
		}
		if onTime == 0 || !traffictest.AimedWithinSpan(h) {
			return fmt.Sprintf("no boundary batch went out on time at an edge learned within the shots' span (aims %+v, span %v): the burst was never measured", h.Meta.Aims, h.Meta.BoundarySpan)
		}
		if limitOnly := onTime * 5 * 2; allowed <= limitOnly {
			t.Fatalf("%d allowed around %d on-time boundaries; want the boundary burst (> %d)", allowed, onTime, limitOnly)
		}
		return ""
	})
	if busy != "" {
		t.Fatal("in three runs " + busy)
	}
}

// An identity in the URL's path and query ({id}), escaped for each, over
// the fast client (http://) and net/http (https://).
func TestHTTPTargetPathIdentity(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[secure], func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			seen := map[string]int{}
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seg := strings.TrimSuffix(strings.TrimPrefix(r.URL.EscapedPath(), "/users/"), "/orders")
				id, err := url.PathUnescape(seg)
				if err != nil || r.URL.Query().Get("acct") != id || r.Header.Get("X-Api-Key") != "" {
					http.Error(w, "path "+r.URL.EscapedPath()+" query "+r.URL.RawQuery, http.StatusBadRequest)
					return
				}
				mu.Lock()
				seen[id]++
				mu.Unlock()
			})
			o := Options{}
			var srv *httptest.Server
			srv, o.TLS = serveHTTP(t, secure, h)
			o.URLs = []string{srv.URL + "/users/{id}/orders?v=1&acct={id}"}
			tgt, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer tgt.Close()
			if g := tgt.Gateways()[0]; !strings.Contains(g, "/users/{id}/orders") {
				t.Errorf("gateway named %q; want the URL as written", g)
			}
			plan := traffic.Plan{Rate: perSecond(100), Duration: 100 * time.Millisecond, MaxRequests: 1000,
				IdentityNames: []string{"a b/c", "bob&co"}}
			hist, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c := traffictest.Counts(hist); c[decision.Allowed] != 10 {
				t.Fatalf("outcomes %v; want 10 allowed", c)
			}
			mu.Lock()
			defer mu.Unlock()
			if seen["a b/c"] != 5 || seen["bob&co"] != 5 {
				t.Fatalf("server saw %v; want both identities whole in path and query", seen)
			}
		})
	}
}

func TestHTTPTargetRejectsIdentityInHost(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://{id}.example.test/", "http://u:{id}@example.test/", "http://example.test/#{id}"} {
		if _, err := New(Options{URLs: []string{u}}); err == nil || !strings.Contains(err.Error(), "{id}") {
			t.Errorf("%s: error %v; want one naming {id}", u, err)
		}
	}
}

// Source addresses: every identity's requests leave from its own address,
// as a gateway keying on the client's address needs, over the fast client
// and net/http alike.
func TestHTTPTargetSourceIdentity(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[secure], func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			from := map[string]map[string]int{} // identity → remote host → requests
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				host, _, _ := net.SplitHostPort(r.RemoteAddr)
				mu.Lock()
				defer mu.Unlock()
				id := r.Header.Get("X-Api-Key")
				if from[id] == nil {
					from[id] = map[string]int{}
				}
				from[id][host]++
			})
			o := Options{IdentityHeader: "X-API-Key", Sources: []netip.Addr{
				netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.4")}}
			var srv *httptest.Server
			srv, o.TLS = serveHTTP(t, secure, h)
			o.URLs = []string{srv.URL + "/a", srv.URL + "/b"}
			tgt, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer tgt.Close()
			plan := traffic.Plan{Rate: perSecond(300), Duration: 200 * time.Millisecond, MaxRequests: 1000, Identities: 3}
			hist, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c := traffictest.Counts(hist); c[decision.Allowed] != 60 {
				t.Fatalf("outcomes %v; want 60 allowed", c)
			}
			mu.Lock()
			defer mu.Unlock()
			for i := range 3 {
				id, want := fmt.Sprintf("user-%d", i), fmt.Sprintf("127.0.0.%d", i+2)
				if len(from[id]) != 1 || from[id][want] != 20 {
					t.Errorf("%s came from %v; want 20 requests, all from %s", id, from[id], want)
				}
			}
		})
	}
	// An address the machine does not have is refused up front.
	if _, err := New(Options{URLs: []string{"http://127.0.0.1:1/"}, IdentityHeader: "K",
		Sources: []netip.Addr{netip.MustParseAddr("192.0.2.7")}}); err == nil || !strings.Contains(err.Error(), "192.0.2.7 is not this machine's") {
		t.Errorf("source 192.0.2.7 (TEST-NET-1): %v; want it refused", err)
	}
	// An identity beyond the addresses given is an error, not a request
	// from some other address.
	tgt, err := New(Options{URLs: []string{"http://127.0.0.1:1/"}, IdentityHeader: "K",
		Sources: []netip.Addr{netip.MustParseAddr("127.0.0.2")}})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	if r := tgt.Do(context.Background(), traffic.Request{Identity: 1, ID: "user-1"}); r.Err == nil || !strings.Contains(r.Err.Error(), "no source address") {
		t.Errorf("identity 1 of 1 source: %v; want an error", r.Err)
	}
}

// serveHTTP serves h on loopback, over TLS when secure, and returns the
// TLS configuration that trusts it (nil for plain http).
func serveHTTP(t *testing.T, secure bool, h http.Handler) (*httptest.Server, *tls.Config) {
	t.Helper()
	if !secure {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv, nil
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, &tls.Config{RootCAs: roots}
}
