package resp

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"
)

// replyConn is a net.Conn whose reads come from a fixed reply, for feeding
// the reply readers whatever a broken or hostile server might send.
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
