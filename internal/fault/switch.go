package fault

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrDown is the error of every read and write on a connection a Switch
// dialed while down.
var ErrDown = errors.New("redis-down fault: the gateways are cut off from Redis")

// Switch is a network fault on the gateways' side: used as the dialer of
// every Redis client the gateways use (data nodes, Sentinels, Cluster
// nodes alike), it cuts their connections and answers their dials with cut
// ones (down), or delays every byte they send (latency). It acts on rlctl's
// own connections only, so it works on any topology and touches nothing on
// a server.
type Switch struct {
	dialer net.Dialer

	mu      sync.Mutex
	latency time.Duration
	conns   map[*switchConn]struct{}

	// isDown is set while down (changed under mu), and cuts counts the
	// times the switch went down: a connection dialed before the latest
	// cut is dead from that instant on, before SetDown has got round to
	// closing its socket.
	isDown atomic.Bool
	cuts   atomic.Uint64
}

// NewSwitch returns a switch that passes everything through until told
// otherwise.
func NewSwitch() *Switch {
	return &Switch{conns: map[*switchConn]struct{}{}}
}

// Dial opens a connection through the switch; its signature is go-redis's
// Options.Dialer. While the switch is down it returns a connection that
// is already cut, without dialing anything, as the Proxy accepts a
// connection and closes it: the client's request fails at once, and a
// client that stops dialing for a while after failed dials (go-redis waits
// a second once PoolSize have failed) does not stretch the outage past the
// fault.
func (s *Switch) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if s.isDown.Load() {
		return cutConn{network: network, addr: addr}, nil
	}
	nc, err := s.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &switchConn{Conn: nc, s: s, done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isDown.Load() {
		// Went down while dialing.
		nc.Close()
		return cutConn{network: network, addr: addr}, nil
	}
	c.cuts = s.cuts.Load()
	s.conns[c] = struct{}{}
	return c, nil
}

// SetDown cuts every connection and answers every dial with a cut one
// (down), or lets dials through again. A client mid-request sees an error
// at once, not a hang. The cut takes effect on every connection at the
// instant the switch goes down: closing the sockets one by one afterwards
// may take a while on a loaded machine, and no byte passes meanwhile.
func (s *Switch) SetDown(down bool) {
	s.mu.Lock()
	s.isDown.Store(down)
	var cut []*switchConn
	if down {
		s.cuts.Add(1)
		for c := range s.conns {
			cut = append(cut, c)
		}
	}
	s.mu.Unlock()
	for _, c := range cut {
		c.cut()
	}
}

// SetLatency delays every write made from now on by d before it reaches
// the network, in order, without holding up the writer: a request is
// answered d later than it would be, and one whose reply is due after the
// client's timeout times out, while the server still gets it, as over a
// slow network.
func (s *Switch) SetLatency(d time.Duration) {
	s.mu.Lock()
	s.latency = d
	s.mu.Unlock()
}

func (s *Switch) currentLatency() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latency
}

// switchConn is one connection through a Switch.
type switchConn struct {
	net.Conn
	s    *Switch
	cuts uint64 // the switch's cuts when this was dialed

	cutOnce sync.Once
	done    chan struct{} // closed once the socket is

	// mu guards the writes waiting for their time, kept in order, and
	// serialises the client's own writes with their delivery. sending is
	// set while a goroutine delivers them.
	mu      sync.Mutex
	queue   []delayed
	sending bool
	closing bool      // the client closed it: cut once the queue is out
	wdl     time.Time // the client's write deadline, for its direct writes
	werr    error     // a failed delayed write, returned by later writes
}

type delayed struct {
	due time.Time
	b   []byte
}

// Write sends b now, or after the switch's latency when one is set (or
// earlier writes still wait: bytes stay in order). A delayed write returns
// at once, as one into a socket's send buffer does.
func (c *switchConn) Write(b []byte) (int, error) {
	if c.dead() {
		c.cut()
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: ErrDown}
	}
	d := c.s.currentLatency()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.werr != nil:
		return 0, c.werr
	case c.closing:
		return 0, net.ErrClosed
	case d <= 0 && !c.sending:
		if err := c.Conn.SetWriteDeadline(c.wdl); err != nil {
			return 0, err
		}
		return c.Conn.Write(b)
	}
	c.queue = append(c.queue, delayed{due: time.Now().Add(d), b: append([]byte(nil), b...)})
	if !c.sending {
		c.sending = true
		go c.send()
	}
	return len(b), nil
}

// Read reads from the socket, and fails once the switch has cut the
// connection, whatever the socket still delivers: a reply that arrives
// after the cut is lost, as on a network that went down.
func (c *switchConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.dead() {
		c.cut()
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: ErrDown}
	}
	return n, err
}

// dead reports that the switch has cut c: it is down, or went down since
// c was dialed.
func (c *switchConn) dead() bool {
	return c.s.isDown.Load() || c.s.cuts.Load() != c.cuts
}

// send delivers the queued writes, each at its time, until none is left;
// it cuts the connection then if the client closed it meanwhile.
func (c *switchConn) send() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.sending = false
			closing := c.closing
			c.mu.Unlock()
			if closing {
				c.cut()
			}
			return
		}
		w := c.queue[0]
		c.mu.Unlock()
		if wait := time.Until(w.due); wait > 0 {
			t.Reset(wait)
			select {
			case <-t.C:
			case <-c.done:
				return
			}
		}
		if c.dead() {
			c.cut()
			return
		}
		// The client's write deadline was for its own write, which
		// returned when it queued: the delivery has none.
		err := c.Conn.SetWriteDeadline(time.Time{})
		if err == nil {
			_, err = c.Conn.Write(w.b)
		}
		c.mu.Lock()
		c.queue = c.queue[1:]
		if err != nil {
			c.werr, c.queue, c.sending = err, nil, false
			c.mu.Unlock()
			c.cut()
			return
		}
		c.mu.Unlock()
	}
}

// SetDeadline sets the read deadline now and keeps the write deadline for
// the client's direct writes (delayed ones are the network's).
func (c *switchConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline keeps t for the client's direct writes.
func (c *switchConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.mu.Unlock()
	return nil
}

// Close closes the connection once the writes still waiting for their time
// are delivered: a command sent before the client gave up still reaches
// the server, as over a slow network.
func (c *switchConn) Close() error {
	c.mu.Lock()
	already, pending := c.closing, c.sending
	c.closing = true
	c.mu.Unlock()
	if already {
		return net.ErrClosed
	}
	if pending {
		return nil
	}
	return c.cut()
}

// cut closes the socket at once, dropping what still waits, and forgets
// the connection.
func (c *switchConn) cut() error {
	err := net.ErrClosed
	c.cutOnce.Do(func() {
		close(c.done)
		err = c.Conn.Close()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return err
}

// SyscallConn exposes the socket, so a pool's liveness check (a peek)
// sees a connection the switch cut as closed.
func (c *switchConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("fault switch: connection has no socket")
	}
	return sc.SyscallConn()
}

// cutConn is a connection dialed while the switch is down: every read and
// write fails with ErrDown.
type cutConn struct {
	network, addr string
}

func (c cutConn) err(op string) error {
	return &net.OpError{Op: op, Net: c.network, Err: ErrDown}
}

func (c cutConn) Read([]byte) (int, error)         { return 0, c.err("read") }
func (c cutConn) Write([]byte) (int, error)        { return 0, c.err("write") }
func (c cutConn) Close() error                     { return nil }
func (c cutConn) LocalAddr() net.Addr              { return cutAddr(c) }
func (c cutConn) RemoteAddr() net.Addr             { return cutAddr(c) }
func (c cutConn) SetDeadline(time.Time) error      { return nil }
func (c cutConn) SetReadDeadline(time.Time) error  { return nil }
func (c cutConn) SetWriteDeadline(time.Time) error { return nil }

// cutAddr names the address a cut connection was dialed to.
type cutAddr cutConn

func (a cutAddr) Network() string { return a.network }
func (a cutAddr) String() string  { return a.addr }
