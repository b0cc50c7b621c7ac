package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/internal/netcheck"
)

// Error is an error reply from the server (the text after '-').
type Error string

func (e Error) Error() string { return string(e) }

// ErrProtocol marks a reply this client cannot read; the connection is
// then dropped.
var ErrProtocol = errors.New("resp: protocol error")

// Conn is one connection. It is not safe for concurrent use: a Pool hands
// it to one caller at a time.
type Conn struct {
	nc  net.Conn
	br  *bufio.Reader
	buf []byte // the command being written
	// bad is set once the stream can no longer be trusted (an I/O or
	// protocol error): the pool closes the connection instead of reusing it.
	bad bool
	// probe tells whether the server closed the connection while it sat
	// in the pool.
	probe *netcheck.Probe
}

func newConn(nc net.Conn) *Conn {
	return &Conn{nc: nc, br: bufio.NewReaderSize(nc, 4096), buf: make([]byte, 0, 256), probe: netcheck.NewProbe(nc)}
}

// Close closes the network connection.
func (c *Conn) Close() error { return c.nc.Close() }

// begin starts a command of n arguments (the command name included).
func (c *Conn) begin(n int) {
	c.buf = c.buf[:0]
	c.more(n)
}

// more starts another command of n arguments after those already in the
// buffer, to send several in one write.
func (c *Conn) more(n int) {
	c.buf = append(c.buf, '*')
	c.buf = strconv.AppendInt(c.buf, int64(n), 10)
	c.buf = append(c.buf, '\r', '\n')
}

// arg appends one bulk-string argument.
func (c *Conn) arg(s string) {
	c.buf = append(c.buf, '$')
	c.buf = strconv.AppendInt(c.buf, int64(len(s)), 10)
	c.buf = append(c.buf, '\r', '\n')
	c.buf = append(c.buf, s...)
	c.buf = append(c.buf, '\r', '\n')
}

// intArg appends one integer argument, as Redis expects it: a bulk string
// of its decimal digits.
func (c *Conn) intArg(v int64) {
	var d [20]byte
	digits := strconv.AppendInt(d[:0], v, 10)
	c.buf = append(c.buf, '$')
	c.buf = strconv.AppendInt(c.buf, int64(len(digits)), 10)
	c.buf = append(c.buf, '\r', '\n')
	c.buf = append(c.buf, digits...)
	c.buf = append(c.buf, '\r', '\n')
}

// errNotSent marks a failed write of which no byte went out: the server
// cannot have seen the command, so it may be sent on another connection.
var errNotSent = errors.New("resp: command not sent")

// flush writes the command. A deadline of zero means none.
func (c *Conn) flush(deadline time.Time) error {
	if err := c.nc.SetDeadline(deadline); err != nil {
		c.bad = true
		return fmt.Errorf("%w: %w", errNotSent, err)
	}
	if n, err := c.nc.Write(c.buf); err != nil {
		c.bad = true
		// Over TLS, n counts only whole records written: a record cut
		// short cannot be decrypted, so n == 0 still means not sent.
		if n == 0 {
			return fmt.Errorf("%w: %w", errNotSent, err)
		}
		return err
	}
	return nil
}

// line reads one reply line without its CRLF. The slice is valid until the
// next read.
func (c *Conn) line() ([]byte, error) {
	l, err := c.br.ReadSlice('\n')
	if err != nil {
		c.bad = true
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: reply line longer than %d bytes", ErrProtocol, c.br.Size())
		}
		return nil, err
	}
	if len(l) < 3 || l[len(l)-2] != '\r' {
		c.bad = true
		return nil, fmt.Errorf("%w: bad line %q", ErrProtocol, l)
	}
	return l[:len(l)-2], nil
}

// parseInt reads a RESP integer without allocating.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var v int64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		v = v*10 + int64(ch-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// readInts reads an array of integers into dst[:0]. An error reply comes
// back as Error with the connection still usable; any other shape is a
// protocol error (the rest of the reply is drained first when it can be,
// so the connection stays in step).
func (c *Conn) readInts(dst []int64) ([]int64, error) {
	l, err := c.line()
	if err != nil {
		return dst, err
	}
	switch l[0] {
	case '-':
		return dst, Error(l[1:])
	case '*':
	default:
		if err := c.skipRest(l); err != nil {
			return dst, err
		}
		return dst, fmt.Errorf("%w: want an array of integers, got %q", ErrProtocol, l)
	}
	n, ok := parseInt(l[1:])
	if !ok {
		c.bad = true
		return dst, fmt.Errorf("%w: bad array length %q", ErrProtocol, l)
	}
	dst = dst[:0]
	var shapeErr error
	for i := int64(0); i < n; i++ {
		l, err := c.line()
		if err != nil {
			return dst, err
		}
		if l[0] == ':' {
			if v, ok := parseInt(l[1:]); ok {
				dst = append(dst, v)
				continue
			}
		}
		if shapeErr == nil {
			shapeErr = fmt.Errorf("%w: element %d is %q, want an integer", ErrProtocol, i, l)
		}
		if err := c.skipRest(l); err != nil {
			return dst, err
		}
	}
	return dst, shapeErr
}

// maxDepth bounds how deeply readAny follows nested arrays, so a hostile
// or broken reply cannot exhaust the stack.
const maxDepth = 64

// maxBulk is Redis's own largest bulk string (proto-max-bulk-len).
const maxBulk = 512 << 20

// readAny reads one reply of any shape (see Pool.Eval). An error reply at
// depth 0 is returned as the error; deeper, as an element.
func (c *Conn) readAny(depth int) (any, error) {
	l, err := c.line()
	if err != nil {
		return nil, err
	}
	switch l[0] {
	case '+':
		return string(l[1:]), nil
	case '-':
		return nil, Error(l[1:])
	case ':':
		if v, ok := parseInt(l[1:]); ok {
			return v, nil
		}
	case '$':
		n, ok := parseInt(l[1:])
		if !ok {
			break
		}
		if n < 0 {
			return nil, nil
		}
		if n > maxBulk {
			break
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.br, b); err != nil {
			c.bad = true
			return nil, err
		}
		if b[n] != '\r' || b[n+1] != '\n' {
			// A bulk string longer than it said: reading on would take
			// its tail for the next reply.
			c.bad = true
			return nil, fmt.Errorf("%w: bulk string of %d bytes not followed by CRLF", ErrProtocol, n)
		}
		return string(b[:n]), nil
	case '*':
		n, ok := parseInt(l[1:])
		if !ok || depth >= maxDepth {
			break
		}
		if n < 0 {
			return nil, nil
		}
		arr := make([]any, n)
		for i := range arr {
			v, err := c.readAny(depth + 1)
			var re Error
			switch {
			case errors.As(err, &re):
				arr[i] = re
			case err != nil:
				return nil, err
			default:
				arr[i] = v
			}
		}
		return arr, nil
	}
	c.bad = true
	return nil, fmt.Errorf("%w: cannot read reply %q", ErrProtocol, l)
}

// readStatus reads a simple-string reply (+OK) and returns an Error reply
// as an error.
func (c *Conn) readStatus() error {
	l, err := c.line()
	if err != nil {
		return err
	}
	switch l[0] {
	case '+':
		return nil
	case '-':
		return Error(l[1:])
	}
	if err := c.skipRest(l); err != nil {
		return err
	}
	return fmt.Errorf("%w: want a status, got %q", ErrProtocol, l)
}

// skipRest consumes whatever follows the header line l of a reply, so a
// reply of an unexpected shape leaves the stream in step.
func (c *Conn) skipRest(l []byte) error {
	switch l[0] {
	case '+', '-', ':':
		return nil
	case '$':
		n, ok := parseInt(l[1:])
		if !ok {
			c.bad = true
			return fmt.Errorf("%w: bad bulk length %q", ErrProtocol, l)
		}
		if n < 0 {
			return nil
		}
		if _, err := c.br.Discard(int(n)); err != nil {
			c.bad = true
			return err
		}
		if crlf, err := c.br.Peek(2); err != nil || crlf[0] != '\r' || crlf[1] != '\n' {
			c.bad = true
			return fmt.Errorf("%w: bulk string of %d bytes not followed by CRLF", ErrProtocol, n)
		}
		_, err := c.br.Discard(2)
		return err
	case '*':
		n, ok := parseInt(l[1:])
		if !ok {
			c.bad = true
			return fmt.Errorf("%w: bad array length %q", ErrProtocol, l)
		}
		for i := int64(0); i < n; i++ {
			e, err := c.line()
			if err != nil {
				return err
			}
			if err := c.skipRest(e); err != nil {
				return err
			}
		}
		return nil
	}
	c.bad = true
	return fmt.Errorf("%w: unknown reply type %q", ErrProtocol, l)
}
