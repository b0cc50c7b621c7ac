package netcheck

import (
	"net"
	"testing"
)

// BenchmarkAlive is one check of an open, quiet loopback TCP connection:
// the price of a check before every request.
func BenchmarkAlive(b *testing.B) {
	client, _ := loopback(b)
	p := NewProbe(client)
	b.ReportAllocs()
	for b.Loop() {
		if !p.Alive() {
			b.Fatal("an open connection reported dead")
		}
	}
}

// loopback returns both ends of a TCP connection on 127.0.0.1, closed when
// the test ends.
func loopback(tb testing.TB) (client, server net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}
