package httptarget

import (
	"context"
	"crypto/tls"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/netcheck"
	"github.com/rlctl/rlctl/internal/redact"
)

// warmDials are net/http's dial hooks for an http target: each hands out a
// connection opened ahead (by warm) for the address when one is left and
// still alive, else dials. net/http offers no way to fill its pool without
// sending a request, and a request would count against the limiter under
// test; handing it ready connections when it dials does the same job.
type warmDials struct {
	dialer  *net.Dialer
	tlsConf *tls.Config
	timeout time.Duration

	mu    sync.Mutex
	ready map[string][]net.Conn // "tls|addr" or "tcp|addr"
}

func newWarmDials(d *net.Dialer, conf *tls.Config, timeout time.Duration) *warmDials {
	return &warmDials{dialer: d, tlsConf: conf, timeout: timeout, ready: map[string][]net.Conn{}}
}

// take returns a connection opened ahead for key, if one is still usable.
func (w *warmDials) take(key string) net.Conn {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.ready[key]) > 0 {
		l := w.ready[key]
		c := l[len(l)-1]
		w.ready[key] = l[:len(l)-1]
		if usable(c) {
			return c
		}
		c.Close()
	}
	return nil
}

func (w *warmDials) plain(ctx context.Context, network, addr string) (net.Conn, error) {
	if c := w.take("tcp|" + addr); c != nil {
		return c, nil
	}
	return w.dialer.DialContext(ctx, network, addr)
}

func (w *warmDials) tls(ctx context.Context, network, addr string) (net.Conn, error) {
	if c := w.take("tls|" + addr); c != nil {
		return c, nil
	}
	return w.dialTLS(ctx, network, addr)
}

// dialTLS dials and handshakes within the target's timeout (net/http
// leaves both to its hook once one is set).
func (w *warmDials) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	d := &tls.Dialer{NetDialer: w.dialer, Config: w.tlsConf}
	return d.DialContext(ctx, network, addr)
}

// warm opens n connections (TLS ones handshaken) to the gateway at rawURL.
func (w *warmDials) warm(ctx context.Context, rawURL string, n int) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return redact.TargetError(err) // it quotes the URL
	}
	kind, dial := "tcp", w.dialer.DialContext
	if u.Scheme == "https" {
		kind, dial = "tls", w.dialTLS
	}
	addr := dialAddr(u)
	for range n {
		c, err := dial(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.ready[kind+"|"+addr] = append(w.ready[kind+"|"+addr], c)
		w.mu.Unlock()
	}
	return nil
}

// usable reports whether the server has not closed c since it was opened
// ahead. Nothing has read a TLS one since its handshake, so the session
// tickets of a TLS 1.3 server may rightly wait on it (netcheck.AliveTLS).
func usable(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		return netcheck.AliveTLS(tc, time.Millisecond)
	}
	return netcheck.Alive(c)
}

// close closes the connections no request took.
func (w *warmDials) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, l := range w.ready {
		for _, c := range l {
			c.Close()
		}
		delete(w.ready, k)
	}
}

// dialAddr is the host:port a URL's requests connect to: its own port, or
// 80 (http) or 443 (https) when it names none.
func dialAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
