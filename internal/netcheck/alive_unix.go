//go:build unix

package netcheck

import (
	"crypto/tls"
	"net"
	"syscall"
)

// NewProbe returns a Probe for nc.
func NewProbe(nc net.Conn) *Probe {
	p := &Probe{rc: rawConn(nc)}
	p.peek = p.peekFD
	return p
}

// peekFD peeks at one byte without waiting and without consuming it.
func (p *Probe) peekFD(fd uintptr) {
	n, err := peek(fd, &p.buf)
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		p.seen = quiet
	case err == 0 && n > 0:
		p.seen = pending
	default:
		p.seen = closed
	}
}

// rawConn returns the socket under nc (under its TLS layer too), or nil.
func rawConn(nc net.Conn) syscall.RawConn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
