package gateway_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// forwarder is a TCP proxy the test can point at another server: the
// gateways dial it, and Retarget swaps the server behind it and cuts the
// open connections, the way a failover moves a DNS name or a VIP.
type forwarder struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newForwarder(t *testing.T, target string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *forwarder) Addr() string { return f.ln.Addr().String() }

func (f *forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		// dial and track under the lock, so a Retarget cannot slip between
		// them and leave a connection to the old server open
		f.mu.Lock()
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			f.mu.Unlock()
			c.Close()
			continue
		}
		f.conns[c], f.conns[up] = struct{}{}, struct{}{}
		f.mu.Unlock()
		f.pipe(c, up)
	}
}

func (f *forwarder) pipe(c, up net.Conn) {
	pipe := func(dst, src net.Conn) {
		defer f.wg.Done()
		io.Copy(dst, src)
		dst.Close()
		src.Close()
		f.mu.Lock()
		delete(f.conns, dst)
		delete(f.conns, src)
		f.mu.Unlock()
	}
	f.wg.Add(2)
	go pipe(c, up)
	go pipe(up, c)
}

// Retarget points new connections at addr and closes the open ones.
func (f *forwarder) Retarget(addr string) {
	f.mu.Lock()
	f.target = addr
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
}

func (f *forwarder) close() {
	f.ln.Close()
	f.Retarget("")
	f.wg.Wait()
}
