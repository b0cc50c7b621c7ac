//go:build unix

package rawsock

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Conn is a TCP connection whose Read and Write are raw system calls;
// everything else (deadlines, Close, addresses, SyscallConn) is the
// TCPConn's own. Like any net.Conn it may be used from several goroutines
// at once: concurrent Reads (or Writes) take turns, each Write whole.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn
	// rmu and wmu hold one direction's op for its call: the op is shared
	// so that a call allocates nothing.
	rmu, wmu sync.Mutex
	r        op
	w        op
	// xfn is WriteThenRead's function for RawConn's Read, bound once;
	// writing is set until its first call has written.
	xfn     func(fd uintptr) bool
	writing bool
}

// op is one direction's call in progress, its function bound once so
// that a call allocates nothing.
type op struct {
	fn    func(fd uintptr) bool
	buf   []byte
	n     int
	errno syscall.Errno
	eof   bool
}

// Wrap returns nc as a *Conn when it is a bare TCP connection, and nc
// itself otherwise: TLS, and connections whose own Read and Write do
// more (the fault switch's carry its network faults), keep theirs.
func Wrap(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &Conn{TCPConn: tc, rc: rc}
	c.r.fn, c.w.fn, c.xfn = c.readFD, c.writeFD, c.writeThenReadFD
	return c
}

// Read reads as net.Conn.Read does. It reads before it waits: RawConn's
// Read forgets the readiness seen so far before its first call, so a
// wait first would miss data already there.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.r = op{fn: c.r.fn, buf: b}
	err := c.rc.Read(c.r.fn)
	c.r.buf = nil
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case c.r.errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", c.r.errno))
	case c.r.eof:
		return 0, io.EOF
	}
	return c.r.n, nil
}

func (c *Conn) readFD(fd uintptr) bool {
	n, e := ReadFD(fd, c.r.buf)
	switch e {
	case 0:
		c.r.n, c.r.eof = n, n == 0
	case syscall.EAGAIN:
		return false
	default:
		c.r.errno = e
	}
	return true
}

// ReadFD reads from the non-blocking descriptor fd into b (not empty)
// with a raw system call, made again when a signal interrupts it: the
// bytes read, or the call's error, EAGAIN when nothing is there yet. It
// is the read for a syscall.RawConn's Read function, the netpoller
// waiting between calls.
func ReadFD(fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

// Write writes all of b, or returns how much went out before an error.
func (c *Conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w = op{fn: c.w.fn, buf: b}
	err := c.rc.Write(c.w.fn)
	c.w.buf = nil
	switch {
	case err != nil:
		return c.w.n, c.opError("write", err)
	case c.w.errno != 0:
		return c.w.n, c.opError("write", os.NewSyscallError("write", c.w.errno))
	}
	return c.w.n, nil
}

func (c *Conn) writeFD(fd uintptr) bool {
	for c.w.n < len(c.w.buf) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&c.w.buf[c.w.n])), uintptr(len(c.w.buf)-c.w.n))
		switch e {
		case 0:
			c.w.n += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.w.errno = e
			return true
		}
	}
	return true
}

// WriteThenRead writes all of w, then reads into r as Read does, but
// without Read's first attempt, which right after a request finds
// nothing yet and costs a system call per request. w is written
// from inside RawConn's Read, once that has forgotten the readiness seen
// before, so the answer's arrival is sure to end the wait. sent is how
// much of w went out; when it is less than len(w), err is the write's.
// With r empty it only writes, as Read reads nothing then.
func (c *Conn) WriteThenRead(w, r []byte) (sent, n int, err error) {
	if len(r) == 0 {
		sent, err = c.Write(w)
		return sent, 0, err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.w = op{fn: c.w.fn, buf: w}
	c.r = op{fn: c.r.fn, buf: r}
	c.writing = true
	defer func() { c.w.buf, c.r.buf = nil, nil }()
	rerr := c.rc.Read(c.xfn)
	switch {
	case c.w.errno != 0:
		return c.w.n, 0, c.opError("write", os.NewSyscallError("write", c.w.errno))
	case c.writing || c.w.n < len(w):
		// Not written (RawConn failed at once), or the socket's buffer
		// filled: the rest is written, and the answer read, the usual way.
		if rerr == nil {
			rerr = c.rc.Write(c.w.fn)
		}
		if rerr == nil && c.w.errno != 0 {
			rerr = os.NewSyscallError("write", c.w.errno)
		}
		if rerr != nil {
			return c.w.n, 0, c.opError("write", rerr)
		}
		rerr = c.rc.Read(c.r.fn)
	}
	switch {
	case rerr != nil:
		return c.w.n, 0, c.opError("read", rerr)
	case c.r.errno != 0:
		return c.w.n, 0, c.opError("read", os.NewSyscallError("read", c.r.errno))
	case c.r.eof:
		return c.w.n, 0, io.EOF
	}
	return c.w.n, c.r.n, nil
}

// writeThenReadFD writes on its first call and then waits for the answer,
// unless the write failed or filled the socket's buffer; the calls after
// read.
func (c *Conn) writeThenReadFD(fd uintptr) bool {
	if !c.writing {
		return c.readFD(fd)
	}
	c.writing = false
	done := c.writeFD(fd)
	return !done || c.w.errno != 0
}

// opError shapes err as net.Conn's Read and Write do, so errors read the
// same ("read tcp a->b: i/o timeout"), not as RawConn's ("raw-read").
func (c *Conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
