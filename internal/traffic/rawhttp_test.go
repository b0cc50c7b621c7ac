package traffic

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
)

// The raw HTTP/1.1 client against real servers on loopback: every body
// framing a gateway may use, connection reuse, and the limiter headers.
func TestRawHTTPFramings(t *testing.T) {
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
			tg, err := NewHTTP(HTTPOptions{URLs: []string{srv.URL + "/x?a=1"}, IdentityQuery: "key"})
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			if tg.(*httpTarget).raw == nil {
				t.Fatal("plain http:// did not take the raw client")
			}
			for i := 0; i < 5; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				resp := tg.Do(ctx, Request{ID: "a b", Gateway: 0})
				cancel()
				if resp.Err != nil {
					t.Fatalf("request %d: %v", i, resp.Err)
				}
				switch name {
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
func TestRawHTTPSendsIdentity(t *testing.T) {
	t.Parallel()
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Query().Get("key") + "|" + r.Header.Get("X-Api-Key") + "|" + r.Header.Get("X-Tenant")
	}))
	defer srv.Close()
	for _, o := range []HTTPOptions{
		{URLs: []string{srv.URL}, IdentityQuery: "key", Headers: map[string]string{"X-Tenant": "t-{id}"}},
		{URLs: []string{srv.URL}, IdentityHeader: "X-API-Key", Headers: map[string]string{"X-Tenant": "fixed"}},
	} {
		tg, err := NewHTTP(o)
		if err != nil {
			t.Fatal(err)
		}
		if r := tg.Do(context.Background(), Request{ID: "u&1"}); r.Err != nil {
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
func TestRawHTTPReplacesConnectionsClosedWhileIdle(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	srv.Config.IdleTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	tgt, err := NewHTTP(HTTPOptions{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	for i := 0; i < 2; i++ {
		if i == 1 {
			// Past the server's idle timeout and the pool's idle check.
			time.Sleep(1500 * time.Millisecond)
		}
		resp := tgt.Do(context.Background(), Request{ID: "u"})
		if resp.Err != nil || resp.Outcome != decision.Allowed {
			t.Fatalf("request %d: %+v", i, resp)
		}
	}
	if hits.Load() != 2 {
		t.Fatalf("server saw %d requests, want 2", hits.Load())
	}
}
