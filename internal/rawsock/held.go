package rawsock

import "net"

// WriteThenReader is a connection that writes a request and reads its
// answer in one wait: *Conn on Unix (see Conn.WriteThenRead).
type WriteThenReader interface {
	WriteThenRead(w, r []byte) (sent, n int, err error)
}

// maxHeld is the most a Held keeps allocated between requests: a larger
// request (a user's script, a body) is not kept per connection.
const maxHeld = 64 << 10

// Held is the request a client wrote on a connection, held until the
// client reads its answer and then written by that read (WriteThenRead),
// which spares the read that would find no answer yet. It suits a client
// that writes a request whole and then reads its answer, from one
// goroutine. A Held on a connection without WriteThenRead holds nothing.
type Held struct {
	wtr WriteThenReader
	buf []byte
}

// Hold returns the Held for nc.
func Hold(nc net.Conn) Held {
	wtr, _ := nc.(WriteThenReader)
	return Held{wtr: wtr}
}

// Write holds b and reports true, or reports false when this connection
// holds nothing: b is then the caller's to write.
func (h *Held) Write(b []byte) bool {
	if h.wtr == nil {
		return false
	}
	h.buf = append(h.buf, b...)
	return true
}

// Pending reports whether a request is held.
func (h *Held) Pending() bool { return len(h.buf) > 0 }

// Read writes the held request and reads its answer into r. A request
// not all written comes back as a *WriteError, with nothing read.
func (h *Held) Read(r []byte) (int, error) {
	w := h.buf
	h.buf = h.buf[:0]
	if cap(h.buf) > maxHeld {
		h.buf = nil
	}
	sent, n, err := h.wtr.WriteThenRead(w, r)
	if sent < len(w) {
		return 0, &WriteError{Sent: sent, Err: err}
	}
	return n, err
}

// WriteError is a held request's failed write: Sent bytes of it went out
// before Err.
type WriteError struct {
	Sent int
	Err  error
}

func (e *WriteError) Error() string { return e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }
