package hotpath

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"

	"github.com/rlctl/rlctl/internal/netcheck"
	"github.com/rlctl/rlctl/internal/rawsock"
)

// notSent marks a failed write of which no byte of the request went out:
// the server cannot have seen it, so it may be sent on another
// connection. stale is set when the connection was found closed by the
// server before the write was tried.
type notSent struct {
	err   error
	stale bool
}

func (e *notSent) Error() string { return "request not sent: " + e.err.Error() }
func (e *notSent) Unwrap() error { return e.err }

// errStale is a connection the server closed while it sat in the pool
// (CLIENT KILL, its idle timeout, a restart), or one retired by a
// READONLY answer.
var errStale = errors.New("connection closed by the server while idle")

// dial is rueidis's DialCtxFn: the pool's own dialer (rueidis's dialer
// and TLS settings are unused; TLS is the dialer's), its connection
// wrapped so a request is never written on a connection the server
// closed.
func (p *Pool) dial(ctx context.Context, _ string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
	if p.dialing.Load() {
		return nil, errMuxDial
	}
	// A call's context may be a deadlineCtx, whose Done does not fire at
	// its deadline; a dial (TLS handshake included) must end there.
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	nc, err := p.o.Dial(ctx)
	if err != nil {
		return nil, err
	}
	p.conns.Add(1)
	c := &conn{Conn: rawsock.Wrap(nc), p: p, probe: netcheck.NewProbe(nc), gen: p.gen.Load()}
	c.held = rawsock.Hold(c.Conn)
	return c, nil
}

// conn is one connection as rueidis uses it with auto-pipelining off: a
// request written whole, then its replies read, then the next request.
// On a bare TCP connection the request is held until the first read and
// written by it (rawsock.Held), which spares the read that would find no
// answer yet: a system call per request.
type conn struct {
	net.Conn
	p     *Pool
	probe *netcheck.Probe
	gen   uint64
	held  rawsock.Held
	// read is set once a reply was read since the last write: the next
	// write starts a request, on a connection that may have sat idle.
	read bool
	// wrote is set once a byte of the current request went out.
	wrote bool
	once  sync.Once
}

func (c *conn) Write(b []byte) (int, error) {
	if c.read {
		c.read = false
		// A fresh connection is not probed: its TLS session tickets may
		// still be unread.
		if c.gen != c.p.gen.Load() || !c.probe.Alive() {
			c.Close()
			return 0, &notSent{err: errStale, stale: true}
		}
	}
	if c.held.Write(b) {
		return len(b), nil
	}
	n, err := c.Conn.Write(b)
	if err != nil && n == 0 && !c.wrote {
		// Over TLS, n counts only whole records written: a record cut
		// short cannot be decrypted, so n == 0 still means not sent.
		err = &notSent{err: err}
	}
	if n > 0 {
		c.wrote = true
	}
	return n, err
}

func (c *conn) Read(b []byte) (int, error) {
	if c.held.Pending() {
		n, err := c.held.Read(b)
		if we, ok := err.(*rawsock.WriteError); ok {
			if we.Sent == 0 {
				return 0, &notSent{err: we.Err}
			}
			return 0, we.Err
		}
		c.read, c.wrote = true, false
		return n, err
	}
	c.read, c.wrote = true, false
	return c.Conn.Read(b)
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.p.conns.Add(-1) })
	return err
}
