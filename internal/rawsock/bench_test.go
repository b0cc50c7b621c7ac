//go:build unix

package rawsock_test

import (
	"io"
	"net"
	"testing"

	"github.com/rlctl/rlctl/internal/rawsock"
)

// BenchmarkRoundTrip is one small request and its reply over loopback,
// the hot path's shape, through a wrapped connection and through
// net.Conn itself: the price of the raw calls against Go's own.
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{
		{"rawsock", rawsock.Wrap},
		{"net.Conn", func(c net.Conn) net.Conn { return c }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			client, server := loopback(b)
			if _, ok := client.(*rawsock.Conn); !ok {
				b.Fatal("not wrapped")
			}
			c := bc.wrap(client.(*rawsock.Conn).TCPConn)
			go io.Copy(server, server) // echo
			req := []byte("*1\r\n$4\r\nPING\r\n")
			reply := make([]byte, len(req))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
