package netcheck

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// Probe tells, without blocking, whether one pooled connection can carry
// the next request. Pools check every connection with it when they take
// one, however briefly it sat idle: a server closes connections at any
// time (CLIENT KILL, its idle timeout, a restart), and a request written
// on a closed one is lost although the server is fine. Made once per
// connection, a check costs one non-blocking system call and allocates
// nothing. A Probe is not safe for concurrent use, as its connection is
// used by one caller at a time.
type Probe struct {
	rc syscall.RawConn // nil where the socket cannot be peeked at
	// peek is the method value of the platform's peek, bound once so that
	// a check allocates nothing; it leaves its answer in seen.
	peek func(fd uintptr)
	seen state
	buf  [1]byte
}

// state is what a peek saw on a socket.
type state uint8

const (
	quiet   state = iota // open, nothing to read
	pending              // open as far as can be seen, with bytes to read
	closed               // end of stream or an error: the peer closed or reset it
)

// Alive reports whether the connection is open and quiet: a peer that
// closed or reset it shows as end of stream or an error, and any unread
// byte means the stream is out of step with its requests. Where the
// socket cannot be peeked at (Windows, a connection that is no socket) it
// reports true, and a dead connection shows on use.
func (p *Probe) Alive() bool { return p.check() == quiet }

// check peeks at the socket through RawConn's Control, which neither
// consults nor changes the connection's deadlines: a pool probes after
// its request's client set the request's own, and a read deadline that
// has passed by then is that request's to meet, not the probe's to clear.
func (p *Probe) check() state {
	if p.rc == nil {
		return quiet
	}
	p.seen = closed
	if p.rc.Control(p.peek) != nil {
		return closed
	}
	return p.seen
}

// Alive is NewProbe(nc).Alive(), for a connection checked once.
func Alive(nc net.Conn) bool { return NewProbe(nc).Alive() }

// AliveTLS is Alive for a TLS connection not read from since its
// handshake. A TLS 1.3 server sends its session tickets after the
// handshake, and they wait on such a connection until its first read;
// from the socket they look like any record, a close_notify included. So
// bytes waiting are read through tc, waiting at most wait for more: the
// connection is alive when that read finds no application data and no
// close. That read sets a read deadline of its own and then clears it, so
// AliveTLS is for a connection no request has set one on yet.
func AliveTLS(tc *tls.Conn, wait time.Duration) bool {
	switch NewProbe(tc).check() {
	case quiet:
		return true
	case closed:
		return false
	}
	if tc.SetReadDeadline(time.Now().Add(wait)) != nil {
		return false
	}
	var b [1]byte
	n, err := tc.Read(b[:])
	// A TLS read that timed out leaves the connection usable; anything
	// else is data out of step, a close or an error.
	return n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && tc.SetReadDeadline(time.Time{}) == nil
}
