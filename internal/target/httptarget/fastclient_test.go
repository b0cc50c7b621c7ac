package httptarget

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/traffic"
)

// The fast HTTP/1.1 client against real servers on loopback: every body
// framing a gateway may use, connection reuse, and the limiter headers.
func TestFastHTTPFramings(t *testing.T) {
	t.Parallel()
	handlers := map[string]http.HandlerFunc{
		"content-length": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte("slow down"))
		},
		"chunked": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("RateLimit-Remaining", "7")
			for i := 0; i < 3; i++ {
				w.Write([]byte(strings.Repeat("x", 5000)))
				w.(http.Flusher).Flush()
			}
		},
		"close": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			w.Write([]byte("bye"))
		},
		"empty": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
		// An interim answer first: the final one is the decision.
		"early-hints": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		},
	}
	for name, h := range handlers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conns := 0
			srv := httptest.NewUnstartedServer(h)
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns++
				}
			}
			srv.Start()
			defer srv.Close()
			tg, err := New(Options{URLs: []string{srv.URL + "/x?a=1"}, IdentityQuery: "key"})
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			if tg.(*httpTarget).fast == nil {
				t.Fatal("plain http:// did not take the fast client")
			}
			for i := 0; i < 5; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				resp := tg.Do(ctx, traffic.Request{ID: "a b", Gateway: 0})
				cancel()
				if resp.Err != nil {
					t.Fatalf("request %d: %v", i, resp.Err)
				}
				switch name {
				case "early-hints":
					if resp.Outcome != decision.Denied || resp.RetryAfter != 2*time.Second {
						t.Fatalf("got %v retry-after %v", resp.Outcome, resp.RetryAfter)
					}
				case "content-length":
					if resp.Outcome != decision.Denied || resp.RetryAfter != 3*time.Second {
						t.Fatalf("got %v retry-after %v", resp.Outcome, resp.RetryAfter)
					}
				case "chunked":
					if resp.Outcome != decision.Allowed || resp.Remaining != 7 {
						t.Fatalf("got %v remaining %d", resp.Outcome, resp.Remaining)
					}
				default:
					if resp.Outcome != decision.Allowed {
						t.Fatalf("got %v", resp.Outcome)
					}
				}
			}
			srv.Close() // waits for handlers, so conns is settled
			want := 1
			if name == "close" {
				want = 5
			}
			if conns != want {
				t.Errorf("%d connections for 5 sequential requests, want %d", conns, want)
			}
		})
	}
}

// The identity reaches the gateway escaped in the query, and as a header.
func TestFastHTTPSendsIdentity(t *testing.T) {
	t.Parallel()
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Query().Get("key") + "|" + r.Header.Get("X-Api-Key") + "|" + r.Header.Get("X-Tenant")
	}))
	defer srv.Close()
	for _, o := range []Options{
		{URLs: []string{srv.URL}, IdentityQuery: "key", Headers: map[string]string{"X-Tenant": "t-{id}"}},
		{URLs: []string{srv.URL}, IdentityHeader: "X-API-Key", Headers: map[string]string{"X-Tenant": "fixed"}},
	} {
		tg, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if r := tg.Do(context.Background(), traffic.Request{ID: "u&1"}); r.Err != nil {
			t.Fatal(r.Err)
		}
		tg.Close()
	}
	if a, b := <-got, <-got; a != "u&1||t-u&1" || b != "|u&1|fixed" {
		t.Errorf("gateway saw %q and %q", a, b)
	}
}

// A keep-alive connection the gateway closed while idle is not reused: the
// request after the idle spell reaches the gateway instead of being
// recorded as its error.
func TestFastHTTPReplacesConnectionsClosedWhileIdle(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	srv.Config.IdleTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	tgt, err := New(Options{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	for i := 0; i < 2; i++ {
		if i == 1 {
			// Well past the server's idle timeout.
			time.Sleep(1500 * time.Millisecond)
		}
		resp := tgt.Do(context.Background(), traffic.Request{ID: "u"})
		if resp.Err != nil || resp.Outcome != decision.Allowed {
			t.Fatalf("request %d: %+v", i, resp)
		}
	}
	if hits.Load() != 2 {
		t.Fatalf("server saw %d requests, want 2", hits.Load())
	}
}

// A keep-alive connection the gateway closed an instant ago (a restart, a
// limit of requests per connection) is not reused either: a POST, which is
// never sent twice, reaches the gateway instead of being lost.
func TestFastHTTPReplacesConnectionsJustClosed(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	// The server's connections, so the test closes them itself and knows
	// which: one dialed ahead that the server has not accepted yet stays
	// open, and works.
	var mu sync.Mutex
	open := map[net.Conn]struct{}{}
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open[c] = struct{}{}
		case http.StateClosed, http.StateHijacked:
			delete(open, c)
		}
	}
	srv.Start()
	defer srv.Close()
	closeAll := func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		closed := map[string]bool{}
		for c := range open {
			c.Close()
			closed[c.RemoteAddr().String()] = true
		}
		clear(open)
		return closed
	}
	tgt, err := New(Options{URLs: []string{srv.URL}, Method: "POST", MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	if err := tgt.(traffic.Warmer).Warm(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	// First the connections opened ahead, then those that have carried
	// requests already.
	for round := range 2 {
		closesArrived(t, tgt, closeAll())
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if resp := tgt.Do(context.Background(), traffic.Request{ID: "u"}); resp.Err != nil || resp.Outcome != decision.Allowed {
					t.Errorf("round %d, request %d right after the gateway closed its connections: %+v", round, i, resp)
				}
			})
		}
		wg.Wait()
		if want := int64(8 * (round + 1)); hits.Load() != want {
			t.Fatalf("round %d: server saw %d requests, want %d", round, hits.Load(), want)
		}
	}
}

// closesArrived waits, at most 2 s, until every connection tgt's pools
// hold from a local address in closed has its gateway's close in hand,
// as the next request's check will find it: the close reaches the
// client's socket a little after the server's close returns, later on a
// loaded machine (the kernel may defer it), and a request written before
// that is lost in a way no check can foresee.
func closesArrived(t *testing.T, tgt traffic.Target, closed map[string]bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for _, pools := range tgt.(*httpTarget).fast {
		for _, p := range pools {
			p.mu.Lock()
			conns := make([]*fastConn, 0, len(p.live))
			for c := range p.live {
				if closed[c.local.String()] {
					conns = append(conns, c)
				}
			}
			p.mu.Unlock()
			for _, c := range conns {
				for c.probe.Alive() {
					if time.Now().After(deadline) {
						t.Fatal("a connection the gateway closed still looks open after 2 s")
					}
					time.Sleep(time.Millisecond)
				}
			}
		}
	}
}

// oneShotServer answers one request per connection as if keeping it
// alive, then closes the connection on the next request without answering
// it: that request is lost after it reached the server, which a check of
// the idle connection cannot foresee. It counts the requests it answered.
func oneShotServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var served atomic.Int64
	addr := scriptServer(t, func(n int) ([]byte, bool) {
		if n > 0 {
			return nil, true
		}
		served.Add(1)
		return []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), false
	})
	return "http://" + addr, &served
}

// scriptServer is a server on loopback that reads each request's head and
// writes what reply says for the n-th request on its connection (nothing
// when nil), closing the connection after it when close.
func scriptServer(t *testing.T, reply func(n int) (b []byte, close bool)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 0; ; n++ {
					for {
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if l == "\r\n" {
							break
						}
					}
					b, end := reply(n)
					c.Write(b)
					if end {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A GET lost on a reused connection the gateway had closed is sent again
// on a new one; a POST is not (it may not be safe to repeat).
func TestFastHTTPRetriesIdempotentRequestsLostOnReuse(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			url, served := oneShotServer(t)
			tgt, err := New(Options{URLs: []string{url}, Method: method})
			if err != nil {
				t.Fatal(err)
			}
			defer tgt.Close()
			errs := 0
			for i := 0; i < 5; i++ {
				if resp := tgt.Do(context.Background(), traffic.Request{ID: "u"}); resp.Err != nil {
					errs++
				}
			}
			switch method {
			case "GET":
				if errs != 0 || served.Load() != 5 {
					t.Fatalf("GET: %d errors, %d served; want 0 errors, 5 served", errs, served.Load())
				}
			case "POST":
				if errs == 0 {
					t.Fatal("POST: every request succeeded on a server that closes each connection; the test checks nothing")
				}
			}
		})
	}
}

// Warm opens the connections before any request, and requests that come
// at once afterwards use them: the gateway sees no new connection.
func TestFastHTTPWarm(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer()
	srv.Start()
	defer srv.Close()
	tg, err := New(Options{URLs: []string{srv.URL, srv.URL + "/b"}, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.(traffic.Warmer).Warm(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	waitConns(t, conns, 10, "after Warm(5) on 2 gateways")
	var wg sync.WaitGroup
	for g := range 2 {
		for range 5 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if r := tg.Do(ctx, traffic.Request{ID: "u", Gateway: g}); r.Err != nil {
					t.Error(r.Err)
				}
			})
		}
	}
	wg.Wait()
	if n := conns.Load(); n != 10 {
		t.Fatalf("%d connections after 5 concurrent requests per warm gateway, want still 10", n)
	}
}

// An https:// gateway with a private CA: the target trusts the CA it is
// given (and refuses the certificate without it), and Warm hands net/http
// connections already handshaken, so requests that come at once open none.
func TestHTTPSWarmAndCA(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer()
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	untrusted, err := New(Options{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer untrusted.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r := untrusted.Do(ctx, traffic.Request{ID: "u"}); r.Outcome != decision.Error || !strings.Contains(r.Err.Error(), "certificate") {
		t.Fatalf("without the CA: %v %v, want a certificate error", r.Outcome, r.Err)
	}
	base := conns.Load()

	tg, err := New(Options{URLs: []string{srv.URL}, TLS: &tls.Config{RootCAs: roots}})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.(traffic.Warmer).Warm(ctx, 4); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	waitConns(t, conns, base+4, "after Warm(4) (counting the refused one)")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if r := tg.Do(ctx, traffic.Request{ID: "u"}); r.Outcome != decision.Allowed {
				t.Errorf("with the CA: %v %v", r.Outcome, r.Err)
			}
		})
	}
	wg.Wait()
	if n := conns.Load() - base; n != 4 {
		t.Fatalf("%d connections after 4 requests at once on 4 warm ones, want 4", n)
	}
}

// countingServer is an unstarted test gateway answering 200 that counts
// the connections it accepts.
func countingServer() (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	return srv, &conns
}

// waitConns waits until the server has accepted want connections: it
// counts one when it accepts it, a moment after the dial returned.
func waitConns(t *testing.T, conns *atomic.Int64, want int64, when string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); conns.Load() != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections %s, want %d", conns.Load(), when, want)
		}
	}
}

// slowGateway is a target whose gateway holds every request for the
// identity "slow" until the test ends and answers the others at once,
// with a 30s timeout no test waits out.
func slowGateway(t *testing.T) traffic.Target {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("key") == "slow" {
			<-release
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	tgt, err := New(Options{URLs: []string{srv.URL}, IdentityQuery: "key", Timeout: 30 * time.Second, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	return tgt
}

// cancelCutsShort sends n requests that the gateway holds under a context
// of their own and fails unless cancelling it ends each of them at once,
// with an error.
func cancelCutsShort(t *testing.T, tgt traffic.Target, what string, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan traffic.Response, n)
	for range n {
		go func() { done <- tgt.Do(ctx, traffic.Request{ID: "slow"}) }()
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	for range n {
		select {
		case r := <-done:
			if r.Err == nil {
				t.Fatalf("%s: a cancelled request answered: %+v", what, r)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: a cancelled request still waits on the gateway", what)
		}
	}
}

// A run cancelled while its requests wait on a slow gateway ends them at
// once, not after the timeout; the connections left idle then carry the
// next run's requests as usual.
func TestFastHTTPCancelCutsRequestsShort(t *testing.T) {
	t.Parallel()
	tgt := slowGateway(t)
	for range 4 { // connections that are idle when the run is cancelled
		if r := tgt.Do(context.Background(), traffic.Request{ID: "quick"}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	cancelCutsShort(t, tgt, "a run", 3)
	for i := range 8 {
		if r := tgt.Do(context.Background(), traffic.Request{ID: "quick"}); r.Err != nil || r.Outcome != decision.Allowed {
			t.Fatalf("request %d after the cancelled run: %+v", i, r)
		}
	}
}

// The pool watches one context for all its requests: each run in turn
// gets the watch once the one before is done, and a run whose context
// comes while another's is live still has its requests cut.
func TestFastHTTPCancelCutsEachRunInTurn(t *testing.T) {
	t.Parallel()
	tgt := slowGateway(t)
	for _, run := range []string{"first run", "second run"} {
		cancelCutsShort(t, tgt, run, 2)
	}
	live, stop := context.WithCancel(context.Background())
	defer stop()
	if r := tgt.Do(live, traffic.Request{ID: "quick"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	cancelCutsShort(t, tgt, "a run beside a live one", 2)
}
