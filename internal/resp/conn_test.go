package resp

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// replyConn is a net.Conn whose reads come from a fixed reply, for feeding
// the reply readers whatever a broken or hostile server might send.
// FuzzReplyRoundTrip encodes a reply built from fuzzed bytes (integers,
// simple and bulk strings of any bytes, nils, nested arrays), follows it
// with another reply, and requires the reader to return the value as
// built and then the next reply as itself: no reply is read short or
// long, whatever its strings hold.
func FuzzReplyRoundTrip(f *testing.F) {
	f.Add([]byte{4, 3, 0, 7, 2, 3, 'a', '\r', '\n', 3})
	f.Add([]byte{2, 0})
	f.Add([]byte{1, 5, 'h', 'e', 'l', 'l', 'o'})
	f.Fuzz(func(t *testing.T, data []byte) {
		var wire bytes.Buffer
		want, _ := buildReply(&wire, data, 0)
		wire.WriteString(":42\r\n")
		c := newConn(replyConn{r: bytes.NewReader(wire.Bytes())})
		got, err := c.readAny(0)
		if err != nil || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Fatalf("%q read as %#v, %v; want %#v", wire.Bytes(), got, err, want)
		}
		if next, err := c.readAny(0); err != nil || next != int64(42) {
			t.Fatalf("%q: the next reply read as %v, %v", wire.Bytes(), next, err)
		}
	})
}

// buildReply writes one RESP reply chosen by data to w and returns its
// value as readAny gives it, and the bytes of data left.
func buildReply(w *bytes.Buffer, data []byte, depth int) (any, []byte) {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	switch kind := next() % 5; {
	case kind == 1: // simple string: no CR or LF inside
		n := int(next() % 16)
		s := strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return '_'
			}
			return r
		}, string(data[:min(n, len(data))]))
		data = data[min(n, len(data)):]
		fmt.Fprintf(w, "+%s\r\n", s)
		return s, data
	case kind == 2: // bulk string: any bytes
		n := int(next() % 32)
		s := string(data[:min(n, len(data))])
		data = data[min(n, len(data)):]
		fmt.Fprintf(w, "$%d\r\n%s\r\n", len(s), s)
		return s, data
	case kind == 3:
		w.WriteString("$-1\r\n")
		return nil, data
	case kind == 4 && depth < 3:
		n := int(next() % 4)
		arr := make([]any, n)
		fmt.Fprintf(w, "*%d\r\n", n)
		for i := range arr {
			arr[i], data = buildReply(w, data, depth+1)
		}
		return arr, data
	}
	v := int64(int8(next())) * 1000
	fmt.Fprintf(w, ":%d\r\n", v)
	return v, data
}

type replyConn struct {
	net.Conn
	r *bytes.Reader
}

func (c replyConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c replyConn) Close() error                     { return nil }
func (c replyConn) SetDeadline(t time.Time) error    { return nil }
func (c replyConn) SetReadDeadline(time.Time) error  { return nil }
func (c replyConn) SetWriteDeadline(time.Time) error { return nil }

// Whatever bytes come back, the readers return: no panic, no endless loop,
// and no allocation sized by a length the server claims but does not send.
func FuzzReadReplies(f *testing.F) {
	for _, s := range []string{
		":7\r\n", "$4\r\ntext\r\n", "$-1\r\n", "*2\r\n:1\r\n$1\r\nx\r\n", "*-1\r\n", "-ERR no\r\n",
		"+OK\r\n", "*1\r\n*1\r\n*1\r\n:1\r\n", "$99999999999\r\n", "*3\r\n:1\r\n", "~1\r\n", ":\r\n", "\r\n",
		"*2\r\n-ERR inner\r\n:2\r\n", "$2\r\nabc\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, reply []byte) {
		for _, read := range []func(c *Conn) error{
			func(c *Conn) error { _, err := c.readAny(0); return err },
			func(c *Conn) error { _, err := c.readInts(nil); return err },
			func(c *Conn) error { return c.readStatus() },
		} {
			read(newConn(replyConn{r: bytes.NewReader(reply)}))
		}
	})
}

// A claimed length beyond Redis's own bound, or tables nested beyond
// maxDepth, are refused and the connection is dropped.
func TestReadAnyRefusesHostileReplies(t *testing.T) {
	t.Parallel()
	deep := bytes.Repeat([]byte("*1\r\n"), maxDepth+1)
	for _, reply := range [][]byte{[]byte("$99999999999\r\n"), append(deep, ":1\r\n"...)} {
		c := newConn(replyConn{r: bytes.NewReader(reply)})
		v, err := c.readAny(0)
		if !errors.Is(err, ErrProtocol) || !c.bad {
			t.Errorf("reply %.20q...: %v, %v (bad %v), want a protocol error and a dropped connection", reply, v, err, c.bad)
		}
	}
}
