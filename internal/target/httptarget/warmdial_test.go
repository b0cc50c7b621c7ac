package httptarget

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/netcheck"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/traffic"
)

// Connections opened ahead that the gateway closed before any request
// went out on them are not handed to net/http, which would not retry a
// request lost on a connection it believes fresh: the requests made right
// after the close reach the gateway.
func TestHTTPSWarmConnectionsClosedByGatewayAreReplaced(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	trusting := srv.Client().Transport.(*http.Transport).TLSClientConfig
	tg, err := New(Options{URLs: []string{srv.URL}, TLS: trusting})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tg.(traffic.Warmer).Warm(ctx, 4); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	srv.CloseClientConnections()
	for i := range 4 {
		if r := tg.Do(ctx, traffic.Request{ID: "u"}); r.Err != nil || r.Outcome != decision.Allowed {
			t.Fatalf("request %d right after the gateway closed the warm connections: %v %v", i, r.Outcome, r.Err)
		}
	}
}

// A TLS 1.3 server built on OpenSSL (redis-server here, as nginx or
// Envoy would) sends session tickets after the handshake, and they wait
// on a connection opened ahead until its first read: such a connection is
// handed out all the same, however long it waited, instead of being taken
// for one out of step and dialed again.
func TestWarmTLSConnectionsWithSessionTicketsAreUsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.StartTLS(t)
	w := newWarmDials(&net.Dialer{}, &tls.Config{RootCAs: srv.Certs.Pool}, 10*time.Second)
	defer w.close()
	if err := w.warm(ctx, "https://"+srv.Addr, 2); err != nil {
		t.Fatalf("warm: %v", err)
	}
	w.mu.Lock()
	warmed := slices.Clone(w.ready["tls|"+srv.Addr])
	w.mu.Unlock()
	// Longer than any idle time a check could be skipped for.
	time.Sleep(1200 * time.Millisecond)
	if netcheck.Alive(warmed[0]) {
		t.Fatal("no session ticket waits on the warm connection: this test checks nothing")
	}
	for i := range warmed {
		c, err := w.tls(ctx, "tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(warmed, c) {
			c.Close()
			t.Fatalf("connection %d was dialed anew instead of taken from the warm ones", i)
		}
	}
}
