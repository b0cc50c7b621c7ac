//go:build unix

package netcheck

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// Alive reports whether an idle connection is still open and quiet: a
// server that closed it for idleness (redis.conf timeout), or a proxy
// that dropped it, shows as EOF or an error on a non-blocking peek, and
// any unread byte means the stream is out of step. A dead connection
// reused would turn the next request into an error although the server
// is fine.
func Alive(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read yet is the only healthy answer.
		ok = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK)
		return true // never wait: this is a peek
	})
	return err == nil && ok
}
