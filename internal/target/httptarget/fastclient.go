package httptarget

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rlctl/rlctl/internal/netcheck"
	"github.com/rlctl/rlctl/internal/rawsock"
)

// fastPool sends one plain http:// gateway's requests for one source
// address through a fasthttp.HostClient, keep-alive HTTP/1.1, with what a
// measuring instrument needs on top of it:
//   - no request is ever sent twice by the library (its retries are off);
//     rlctl sends one again only when the gateway cannot have seen it: a
//     keep-alive connection found closed before the request was written,
//     or a GET or HEAD whose reused connection closed before any byte of
//     an answer, as net/http does;
//   - connections opened ahead (warm) are the first ones it takes, so no
//     dial lands inside a measured request;
//   - a cancelled run cuts the requests in flight short (cut).
type fastPool struct {
	hc      *fasthttp.HostClient
	host    string     // the Host header
	uri     idTemplate // path and query, the identity in place
	method  string
	dialer  *net.Dialer
	addr    string // host:port to dial
	timeout time.Duration
	warmed  chan *fastConn // dialed ahead, taken by the next dials
	uris    sync.Pool      // *[]byte, a request URI being built

	mu         sync.Mutex
	live       map[*fastConn]struct{} // open connections, for cut
	dialCtx    context.Context        // cancelled by cut: dials in progress end
	dialCancel context.CancelFunc
	cutFor     <-chan struct{} // the context whose requests were cut last

	// watch is the context whose cancellation cuts the pool's requests,
	// watched once for all of them (see watching).
	watch atomic.Pointer[ctxWatch]
}

// ctxWatch is a context watched once for every request of the pool in
// flight under it: a watch per request (context.AfterFunc) took the
// context's lock twice per request, from every worker at once, a cost the
// requests per second showed.
type ctxWatch struct {
	done     <-chan struct{}
	inflight atomic.Int64
}

// watching returns the pool's watch of ctx, made on first use, or nil
// while another context, not yet done, holds it (its requests then watch
// ctx each). A run's requests share one context, done when the run is.
func (p *fastPool) watching(ctx context.Context) *ctxWatch {
	done := ctx.Done()
	if w := p.watch.Load(); w != nil && w.done == done {
		return w
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.watch.Load()
	if w != nil && w.done == done {
		return w
	}
	if w != nil {
		select {
		case <-w.done:
		default:
			return nil
		}
	}
	w = &ctxWatch{done: done}
	context.AfterFunc(ctx, func() {
		// A request counts itself before it checks ctx, so one not
		// counted here sees the cancellation itself.
		if w.inflight.Load() > 0 {
			p.cutIfCancelled(ctx)
		}
	})
	p.watch.Store(w)
	return w
}

// cutIfCancelled cuts the requests in flight when ctx ended by
// cancellation. A deadline that passed needs no cut: the connection's own
// deadline is set from it.
func (p *fastPool) cutIfCancelled(ctx context.Context) {
	if errors.Is(ctx.Err(), context.Canceled) {
		p.cut(ctx.Done())
	}
}

func newFastPool(u *url.URL, method, query string, conns int, dialer *net.Dialer) *fastPool {
	p := &fastPool{
		host: u.Host, uri: newIDTemplate(u.RequestURI() + query), method: method,
		dialer: dialer, addr: dialAddr(u), timeout: dialer.Timeout,
		warmed: make(chan *fastConn, conns), live: make(map[*fastConn]struct{}),
	}
	p.dialCtx, p.dialCancel = context.WithCancel(context.Background())
	p.hc = &fasthttp.HostClient{
		Addr:        p.addr,
		Name:        "rlctl",
		DialTimeout: p.dialFor,
		// The engine's workers bound the requests in flight; the pool
		// itself never makes one wait for a connection.
		MaxConns:                  1 << 20,
		MaxIdleConnDuration:       90 * time.Second,
		MaxIdemponentCallAttempts: 1,
		DisablePathNormalizing:    true,
		MaxResponseBodySize:       maxDrain,
		ReadBufferSize:            16 << 10,
		SecureErrorLogMessage:     true,
	}
	return p
}

// dialFor is the HostClient's dial: a connection opened ahead when one is
// left and still open, else a new one within timeout.
func (p *fastPool) dialFor(_ string, timeout time.Duration) (net.Conn, error) {
	for {
		select {
		case c := <-p.warmed:
			if c.probe.Alive() {
				return c, nil
			}
			c.Close()
			continue
		default:
		}
		break
	}
	p.mu.Lock()
	ctx := p.dialCtx
	p.mu.Unlock()
	if timeout <= 0 || timeout > p.timeout {
		timeout = p.timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return p.dial(ctx)
}

func (p *fastPool) dial(ctx context.Context) (*fastConn, error) {
	nc, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	c := &fastConn{Conn: rawsock.Wrap(nc), p: p, probe: netcheck.NewProbe(nc)}
	c.held = rawsock.Hold(c.Conn)
	c.local = &connAddr{Addr: nc.LocalAddr(), c: c}
	p.mu.Lock()
	p.live[c] = struct{}{}
	p.mu.Unlock()
	return c, nil
}

// warm dials until n connections (at most the pool's size) wait to be
// taken.
func (p *fastPool) warm(ctx context.Context, n int) error {
	for len(p.warmed) < min(n, cap(p.warmed)) {
		c, err := p.dial(ctx)
		if err != nil {
			return err
		}
		select {
		case p.warmed <- c:
		default:
			c.Close()
		}
	}
	return nil
}

// cut ends every request in flight now and every dial in progress: the
// run whose context done is was cancelled. Each of its requests asks for
// the cut, and only the first is made: a later one would end the next
// run's requests. Connections that were idle carry the next request as
// usual, which sets its own deadlines.
func (p *fastPool) cut(done <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutFor == done {
		return
	}
	p.cutFor = done
	for c := range p.live {
		c.cut.Store(true)
		c.Conn.SetDeadline(time.Unix(1, 0))
	}
	p.dialCancel()
	p.dialCtx, p.dialCancel = context.WithCancel(context.Background())
}

func (p *fastPool) close() {
	p.hc.CloseIdleConnections()
	for {
		select {
		case c := <-p.warmed:
			c.Close()
		default:
			return
		}
	}
}

func (p *fastPool) idempotent() bool {
	return p.method == http.MethodGet || p.method == http.MethodHead
}

// fastAnswer is what the target needs from one response.
type fastAnswer struct {
	status int
	hints  http.Header // only Retry-After and the rate-limit fields; nil when none
}

// fastSends reports whether the fast client can send the target's
// requests: fasthttp refuses a body on a GET or HEAD, which net/http
// sends.
func fastSends(method, body string) bool {
	return body == "" || (method != http.MethodGet && method != http.MethodHead)
}

// replaceID puts the identity in place of {id} in a header or body
// template.
func replaceID(s, id string) string { return strings.ReplaceAll(s, "{id}", id) }

// do sends one request for identity id and returns its status and hints.
func (p *fastPool) do(ctx context.Context, t *httpTarget, id string) (fastAnswer, error) {
	// A cancelled run must not wait for a slow gateway: its requests in
	// flight are cut (cutIfCancelled).
	if ctx.Done() != nil {
		if w := p.watching(ctx); w != nil {
			w.inflight.Add(1)
			defer w.inflight.Add(-1)
		} else {
			stop := context.AfterFunc(ctx, func() { p.cutIfCancelled(ctx) })
			defer stop()
		}
	}
	if err := ctx.Err(); err != nil {
		return fastAnswer{}, err
	}
	deadline := time.Now().Add(p.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	p.build(req, t, id)
	retried := false
	for closed := 0; ; {
		err := p.hc.DoDeadline(req, res, deadline)
		switch {
		case err == nil, errors.Is(err, fasthttp.ErrBodyTooLarge):
			// An answer longer than maxDrain is read no further: the
			// library closed its connection, and the status stands.
			return fastAnswer{status: res.StatusCode(), hints: hintsOf(&res.Header)}, nil
		case errors.Is(err, errClosedWhileIdle) && closed < maxClosedIdle && ctx.Err() == nil:
			// Never written: send it on another connection. Each try
			// closes one that was open, and a new one is never found
			// closed this way, so this ends (and the deadline bounds it).
			closed++
		case errors.Is(err, fasthttp.ErrConnectionClosed) && !retried && p.idempotent() && reusedFor(res) && ctx.Err() == nil:
			retried = true
		default:
			return fastAnswer{}, err
		}
	}
}

// build writes the request for identity id into req: the method, the
// URI with the identity in place, the Host, the target's headers and
// body, and nothing the user did not ask for (no default Content-Type).
func (p *fastPool) build(req *fasthttp.Request, t *httpTarget, id string) {
	req.Header.DisableNormalizing()
	req.Header.SetNoDefaultContentType(true)
	req.Header.SetMethod(p.method)
	if p.uri.hasID() {
		b := p.uris.Get()
		if b == nil {
			b = new([]byte)
		}
		buf := b.(*[]byte)
		*buf = p.uri.appendTo((*buf)[:0], id)
		req.SetRequestURIBytes(*buf)
		p.uris.Put(buf)
	} else {
		req.SetRequestURI(p.uri.parts[0])
	}
	req.Header.SetHost(p.host)
	for _, h := range t.headers {
		v := h.value
		if h.hasID {
			v = replaceID(v, id)
		}
		req.Header.Set(h.key, v)
	}
	if t.idHeader != "" {
		req.Header.Set(t.idHeader, id)
	}
	if t.body != "" {
		body := t.body
		if t.bodyHasID {
			body = replaceID(body, id)
		}
		req.SetBodyString(body)
	}
}

// hintsOf keeps the headers a limiter answer carries: Retry-After and
// the rate-limit fields (RateLimit*, X-RateLimit*, X-Rate-Limit*); nil
// when there are none.
func hintsOf(h *fasthttp.ResponseHeader) http.Header {
	var out http.Header
	for k, v := range h.All() {
		if !hintKey(k) {
			continue
		}
		if out == nil {
			out = make(http.Header, 4)
		}
		key := textproto.CanonicalMIMEHeaderKey(string(k))
		out[key] = append(out[key], string(v))
	}
	return out
}

func hintKey(k []byte) bool {
	return (len(k) == len("retry-after") && hasPrefixFold(k, "retry-after")) ||
		hasPrefixFold(k, "ratelimit") || hasPrefixFold(k, "x-ratelimit") || hasPrefixFold(k, "x-rate-limit")
}

func hasPrefixFold(b []byte, s string) bool {
	return len(b) >= len(s) && bytes.EqualFold(b[:len(s)], []byte(s))
}

// maxClosedIdle bounds how many closed connections one request may find
// before it gives up.
const maxClosedIdle = 1 << 10

// errClosedWhileIdle marks a request that was never written: its
// keep-alive connection had been closed by the gateway while idle.
var errClosedWhileIdle = errors.New("connection closed by the gateway while idle")

// reusedFor reports whether res's failed request went on a connection
// that had already carried one: the library names the connection it used
// by its local address, which fastConn gives with the connection attached.
func reusedFor(res *fasthttp.Response) bool {
	a, ok := res.LocalAddr().(*connAddr)
	return ok && a.c.requests > 1
}

// fastConn is one of a fastPool's connections: it counts the requests it
// carries, checks before each one after the first that the gateway has
// not closed it, and, once cut, takes no new read deadline until its next
// request begins.
type fastConn struct {
	net.Conn
	p        *fastPool
	probe    *netcheck.Probe
	local    *connAddr
	requests int  // requests begun on it
	read     bool // read from since the last request began
	cut      atomic.Bool
	// On a bare TCP connection a request is held until fasthttp reads its
	// answer and written by that read, which spares the read that would
	// find no answer yet: a system call per request.
	held rawsock.Held
}

// connAddr is a local address that says which connection it is.
type connAddr struct {
	net.Addr
	c *fastConn
}

func (c *fastConn) LocalAddr() net.Addr { return c.local }

// Write begins a request when the connection is new or has been read
// from since the last one.
func (c *fastConn) Write(b []byte) (int, error) {
	if c.requests == 0 || c.read {
		c.requests++
		c.read = false
		if c.requests > 1 && !c.probe.Alive() {
			return 0, errClosedWhileIdle
		}
	}
	if c.held.Write(b) {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *fastConn) Read(b []byte) (int, error) {
	c.read = true
	if !c.held.Pending() {
		return c.Conn.Read(b)
	}
	n, err := c.held.Read(b)
	if we, ok := err.(*rawsock.WriteError); ok {
		err = we.Err // as the write itself would have failed
	}
	return n, err
}

// SetWriteDeadline comes first in every request: a cut made while the
// connection was idle no longer applies.
func (c *fastConn) SetWriteDeadline(t time.Time) error {
	c.cut.Store(false)
	return c.Conn.SetWriteDeadline(t)
}

func (c *fastConn) SetReadDeadline(t time.Time) error {
	if c.cut.Load() {
		t = time.Unix(1, 0)
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *fastConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.live, c)
	c.p.mu.Unlock()
	return c.Conn.Close()
}
