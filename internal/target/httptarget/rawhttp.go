package httptarget

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlctl/rlctl/internal/netcheck"
)

// rawPool is a keep-alive HTTP/1.1 client for one plain http:// gateway.
//
// Why not net/http: measured against wrk on this kind of machine (2 cores
// shared with the server under test), net/http's per-request allocations
// and goroutine hand-offs made rlctl itself the bottleneck at about a third
// of wrk's rate, so the instrument measured itself. This client writes a
// request into a per-connection buffer, reads the answer with one bufio
// reader, keeps only the headers a limiter answer carries (status, body
// framing, Retry-After, RateLimit*, X-RateLimit*, X-Rate-Limit*), and
// reuses the connection. https:// URLs still go through net/http.
// fasthttp has cost 0.95× to 1.43× its CPU per request (package doc).
type rawPool struct {
	addr    string // host:port to dial
	dialer  *net.Dialer
	method  string     // GET, POST, ...
	head    idTemplate // "METHOD /path?query", the identity in place
	tail    []byte     // " HTTP/1.1\r\nHost: h\r\nUser-Agent: rlctl\r\n"
	idle    chan *rawConn
	timeout time.Duration
}

type rawConn struct {
	c     net.Conn
	br    *bufio.Reader
	buf   []byte          // request being written
	probe *netcheck.Probe // whether the gateway closed it while idle
}

func newRawPool(u *url.URL, method string, query string, conns int, dialer *net.Dialer) *rawPool {
	p := &rawPool{addr: dialAddr(u), dialer: dialer, method: method, idle: make(chan *rawConn, conns), timeout: dialer.Timeout}
	p.head = newIDTemplate(method + " " + u.RequestURI() + query)
	p.tail = []byte(" HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: rlctl\r\n")
	return p
}

// get takes an idle connection, or dials one; reused says which.
func (p *rawPool) get(ctx context.Context) (c *rawConn, reused bool, err error) {
	for {
		select {
		case c := <-p.idle:
			// A gateway that closed it (keep-alive timeout, restart) would
			// have the next request recorded as its error.
			if c.probe.Alive() {
				return c, true, nil
			}
			c.c.Close()
			continue
		default:
		}
		break
	}
	c, err = p.dial(ctx)
	return c, false, err
}

func (p *rawPool) dial(ctx context.Context) (*rawConn, error) {
	c, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c, br: bufio.NewReaderSize(c, 16<<10), buf: make([]byte, 0, 512), probe: netcheck.NewProbe(c)}, nil
}

// warm dials until n connections (at most the pool's size) sit idle.
func (p *rawPool) warm(ctx context.Context, n int) error {
	for len(p.idle) < min(n, cap(p.idle)) {
		c, err := p.dial(ctx)
		if err != nil {
			return err
		}
		p.put(c)
	}
	return nil
}

func (p *rawPool) put(c *rawConn) {
	select {
	case p.idle <- c:
	default:
		c.c.Close()
	}
}

func (p *rawPool) close() {
	for {
		select {
		case c := <-p.idle:
			c.c.Close()
		default:
			return
		}
	}
}

// rawAnswer is what the target needs from one response.
type rawAnswer struct {
	status int
	hints  http.Header // only Retry-After and the rate-limit fields; nil when none
}

// do sends one request for identity id: in the query when the target sends
// it there, and in t's header and body templates.
//
// A GET or HEAD lost on a reused connection that the gateway had closed
// (the write failed, or the connection ended before any byte of an
// answer) is sent once more on a new connection, as net/http does: the
// gateway never saw it, so recording it as the gateway's error would be
// the instrument's fault. Other methods are not repeated.
func (p *rawPool) do(ctx context.Context, t *httpTarget, id string) (rawAnswer, error) {
	c, reused, err := p.get(ctx)
	if err != nil {
		return rawAnswer{}, err
	}
	ans, err := p.send(ctx, c, t, id)
	if err != nil && reused && errors.Is(err, errLostOnReuse) && p.idempotent() && ctx.Err() == nil {
		if c, err = p.dial(ctx); err != nil {
			return rawAnswer{}, err
		}
		ans, err = p.send(ctx, c, t, id)
	}
	return ans, err
}

// errLostOnReuse marks a request that never reached the gateway: the
// connection failed on write, or closed before any byte of an answer.
var errLostOnReuse = errors.New("connection closed before an answer")

func (p *rawPool) idempotent() bool {
	return p.method == http.MethodGet || p.method == http.MethodHead
}

// send writes one request on c and reads its answer; c goes back to the
// pool when it can carry another request, else it is closed.
func (p *rawPool) send(ctx context.Context, c *rawConn, t *httpTarget, id string) (rawAnswer, error) {
	deadline := time.Now().Add(p.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.c.SetDeadline(deadline)
	// A cancelled run must not wait for a slow gateway: cancellation cuts
	// the deadline short.
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	b := p.head.appendTo(c.buf[:0], id)
	b = append(b, p.tail...)
	b = t.appendHeaders(b, id)
	body := t.body
	if t.bodyHasID {
		body = strings.ReplaceAll(body, "{id}", id)
	}
	if body != "" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, body...)
	c.buf = b
	if _, err := c.c.Write(b); err != nil {
		c.c.Close()
		return rawAnswer{}, fmt.Errorf("%w: %w", errLostOnReuse, err)
	}
	ans, keep, err := readRawResponse(c.br, p.method == http.MethodHead)
	if err != nil || !keep {
		c.c.Close()
	} else {
		p.put(c)
	}
	return ans, err
}

var errBadResponse = errors.New("malformed HTTP response")

// readRawResponse reads one response, discarding its body, and says
// whether the connection can carry another request.
//
// Interim answers (1xx: 103 Early Hints, a 100 Continue sent unasked) come
// before the final one and are skipped, as net/http skips them: taking one
// for the answer would leave the real answer to be read as the next
// request's.
func readRawResponse(br *bufio.Reader, head bool) (rawAnswer, bool, error) {
	for first := true; ; first = false {
		a, keep, err := readOneResponse(br, head, first)
		if err != nil || a.status < 100 || a.status >= 200 || a.status == http.StatusSwitchingProtocols {
			return a, keep && a.status != http.StatusSwitchingProtocols, err
		}
	}
}

// readOneResponse reads one response, final or interim; first says no
// byte of the answer has been read yet.
func readOneResponse(br *bufio.Reader, head, first bool) (rawAnswer, bool, error) {
	var a rawAnswer
	line, err := br.ReadSlice('\n')
	if err != nil {
		if first && len(line) == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			err = fmt.Errorf("%w: %w", errLostOnReuse, err)
		}
		return a, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return a, false, errBadResponse
	}
	a.status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return a, false, errBadResponse
	}
	keep := line[7] == '1' // HTTP/1.1 keeps the connection by default
	length, chunked := int64(-1), false
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return a, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return a, false, errBadResponse
		}
		v = bytes.TrimSpace(v)
		switch {
		case equalFold(k, "content-length"):
			if length, err = strconv.ParseInt(string(v), 10, 64); err != nil || length < 0 {
				return a, false, errBadResponse
			}
		case equalFold(k, "transfer-encoding"):
			chunked = bytes.Contains(bytes.ToLower(v), []byte("chunked"))
		case equalFold(k, "connection"):
			if bytes.EqualFold(v, []byte("close")) {
				keep = false
			} else if bytes.EqualFold(v, []byte("keep-alive")) {
				keep = true
			}
		case equalFold(k, "retry-after"), hasPrefixFold(k, "ratelimit"), hasPrefixFold(k, "x-ratelimit"), hasPrefixFold(k, "x-rate-limit"):
			if a.hints == nil {
				a.hints = make(http.Header, 4)
			}
			key := textproto.CanonicalMIMEHeaderKey(string(k))
			a.hints[key] = append(a.hints[key], string(v))
		}
	}
	switch {
	case head || a.status == 204 || a.status == 304 || a.status < 200:
	case chunked:
		if err := discardChunked(br); err != nil {
			return a, false, err
		}
	case length >= 0:
		if length > maxDrain {
			return a, false, nil
		}
		if _, err := br.Discard(int(length)); err != nil {
			return a, false, err
		}
	default:
		// No framing: the body runs to the end of the connection.
		io.CopyN(io.Discard, br, maxDrain)
		keep = false
	}
	return a, keep, nil
}

func discardChunked(br *bufio.Reader) error {
	for total := 0; ; {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || n < 0 {
			return errBadResponse
		}
		if n == 0 {
			for { // trailers, up to the empty line
				line, err := br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if total += int(n); total > maxDrain {
			return fmt.Errorf("chunked body over %d bytes", maxDrain)
		}
		if _, err := br.Discard(int(n) + 2); err != nil {
			return err
		}
	}
}

func equalFold(b []byte, s string) bool { return len(b) == len(s) && bytes.EqualFold(b, []byte(s)) }

func hasPrefixFold(b []byte, s string) bool {
	return len(b) >= len(s) && bytes.EqualFold(b[:len(s)], []byte(s))
}
