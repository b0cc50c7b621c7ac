package redistest

import (
	"net"
	"sync"
	"testing"
)

// Silent is a loopback listener that accepts every connection and never
// answers on it, as a stalled server or a wrong port does: a client
// connects, then waits until its timeout or its context ends. accepted
// gets a value (if none is waiting) each time a connection is accepted.
// The listener and its connections close when the test ends.
func Silent(t testing.TB) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 1)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), ch
}
