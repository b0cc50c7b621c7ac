package httptarget

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/traffic"
)

// slowFirstConn is a listener whose first accepted connection is handed
// to the server only after a delay: a cold gateway whose first TLS
// handshake takes longer than a request's timeout.
type slowFirstConn struct {
	net.Listener
	delay time.Duration
	once  sync.Once
}

func (l *slowFirstConn) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.once.Do(func() { time.Sleep(l.delay) })
	}
	return c, err
}

func probe(t *testing.T, o Options) error {
	t.Helper()
	tg, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	return tg.(traffic.Prober).Probe(context.Background())
}

// TestProbeAllowsASlowFirstHandshake: a live HTTPS gateway whose first
// handshake takes 400ms, four times the scenario's 100ms request timeout,
// is not reported unreachable; the probe gives a connection
// ProbeConnectTimeout to open.
func TestProbeAllowsASlowFirstHandshake(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Listener = &slowFirstConn{Listener: srv.Listener, delay: 400 * time.Millisecond}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	if err := probe(t, Options{URLs: []string{srv.URL}, TLS: &tls.Config{RootCAs: roots}, Timeout: 100 * time.Millisecond}); err != nil {
		t.Fatalf("a live gateway with a slow first handshake: %v", err)
	}
}

// TestProbeFindsASilentGatewayWithinItsTimeout: a gateway that accepts
// connections but never answers is reported unreachable after the request
// timeout once the request is sent, not after the connection allowance
// on top.
func TestProbeFindsASilentGatewayWithinItsTimeout(t *testing.T) {
	t.Parallel()
	addr, _ := redistest.Silent(t)
	start := time.Now()
	err := probe(t, Options{URLs: []string{"http://" + addr + "/"}, Timeout: 100 * time.Millisecond})
	took := time.Since(start)
	if err == nil {
		t.Fatal("a silent gateway answered the probe")
	}
	if took >= ProbeConnectTimeout {
		t.Errorf("a silent gateway was found after %v: the connection allowance (%v) was spent waiting for an answer", took, ProbeConnectTimeout)
	}
}
