package fault

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from a loopback listener to an upstream
// address. Every gateway's client of one standalone Redis dials the proxy,
// so re-pointing it (a failover to another server) reaches every gateway
// at the same instant. redis-down and redis-latency are the Switch's.
type Proxy struct {
	ln net.Listener

	mu       sync.Mutex
	upstream string
	down     bool
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to upstream.
func NewProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address gateways dial instead of Redis.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDown makes the proxy refuse and cut every connection (down) or accept
// them again. Going down closes live connections, so a client mid-request
// sees an error rather than a hang.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	p.down = down
	if down {
		p.dropAllLocked()
	}
	p.mu.Unlock()
}

// SetUpstream re-points the proxy at another server and cuts existing
// connections, as a failover does: clients reconnect to the new primary.
func (p *Proxy) SetUpstream(addr string) {
	p.mu.Lock()
	p.upstream = addr
	p.dropAllLocked()
	p.mu.Unlock()
}

// Upstream is the address currently forwarded to.
func (p *Proxy) Upstream() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.upstream
}

func (p *Proxy) dropAllLocked() {
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Close stops the proxy and cuts every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.dropAllLocked()
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down || p.closed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up := p.upstream
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c, up)
	}
}

func (p *Proxy) serve(client net.Conn, upstream string) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", upstream, 2*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.closed || p.down {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client] = struct{}{}
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { pipe(server, client); done <- struct{}{} }()
	go func() { pipe(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// pipe copies src to dst until either fails.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
}

// Hold applies a fault for d (or until ctx ends), then undoes it.
func Hold(ctx context.Context, d time.Duration, apply, undo func()) {
	apply()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	undo()
}
