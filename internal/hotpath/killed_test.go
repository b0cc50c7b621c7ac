package hotpath_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/hotpath"
	"github.com/rlctl/rlctl/internal/redistest"
)

// Connections the server closed (CLIENT KILL here; a restart or its idle
// timeout look the same from the client) are found before a request is
// sent on them and replaced, however short the time since they were last
// used: no decision fails because the pool held a dead connection.
func TestKilledConnectionsAreReplaced(t *testing.T) {
	t.Parallel()
	const size = 4
	for _, mk := range []struct {
		name string
		srv  func(*testing.T) *redistest.Server
	}{
		{"plain", func(t *testing.T) *redistest.Server { return redistest.Start(t) }},
		{"tls", func(t *testing.T) *redistest.Server { return redistest.StartTLS(t).Server }},
	} {
		for _, idle := range []time.Duration{0, 50 * time.Millisecond, 300 * time.Millisecond, 1500 * time.Millisecond} {
			t.Run(mk.name+"/idle="+idle.String(), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				srv := mk.srv(t)
				admin := srv.Client(t)
				o := *admin.Options() // a copy: the admin's own stays unnamed
				o.PoolSize = size
				o.ClientName = "pool"
				p, _ := hotpath.FromClient(redis.NewClient(&o))
				t.Cleanup(func() { p.Close() })
				if err := p.Warm(ctx, size); err != nil {
					t.Fatalf("Warm: %v", err)
				}
				// The pool's connections, all of them, by name: a client
				// of the server's start-up that has closed may still be
				// listed on a loaded machine.
				if killed := killNamed(t, admin, "pool"); killed != size {
					t.Fatalf("killed %d connections named pool, want the pool's %d", killed, size)
				}
				time.Sleep(idle)
				const calls = 3 * size
				failed := 0
				for range calls {
					var a hotpath.Args
					a.Key("killed")
					a.Int(1)
					a.Int(0)
					if _, err := p.EvalInts(ctx, incr, &a, nil); err != nil {
						if failed == 0 {
							t.Errorf("first failed decision: %v", err)
						}
						failed++
					}
				}
				if failed > 0 {
					t.Fatalf("%d of %d decisions failed after the pool's connections were killed", failed, calls)
				}
				// Each decision ran once: none was lost, none sent twice.
				if v, err := admin.Get(ctx, "killed").Int(); err != nil || v != calls {
					t.Fatalf("killed = %d (%v), want %d", v, err, calls)
				}
			})
		}
	}
}

// A connection idle past the deadline of its last call is open all the
// same: the next call reuses it instead of dialing (a dial inside a
// measured run is latency the design under test did not cause).
func TestConnectionIdlePastItsDeadlineIsReused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	o := admin.Options()
	o.PoolSize = 1
	p, _ := hotpath.FromClient(redis.NewClient(o))
	t.Cleanup(func() { p.Close() })
	var a hotpath.Args
	a.Key("deadline")
	a.Int(1)
	a.Int(0)
	deadline := time.Now().Add(time.Second)
	if _, err := p.EvalIntsUntil(context.Background(), deadline, incr, &a, nil); err != nil {
		t.Fatal(err)
	}
	before := redistest.Accepted(t, admin)
	// Past the deadline and longer than any idle time a pool may skip its
	// check for.
	time.Sleep(time.Until(deadline) + 1500*time.Millisecond)
	call(t, p, "deadline", 1, 0)
	if after := redistest.Accepted(t, admin); after != before {
		t.Fatalf("connections accepted went from %s to %s: the idle connection was dropped", before, after)
	}
}

// faultConn is a real connection that fails on demand. It hides its
// socket, so the pool cannot peek at it (as on Windows) and meets the
// failure on use.
type faultConn struct {
	net.Conn
	failWrite  atomic.Bool // the next Write fails before sending a byte
	afterWrite func()      // when set, runs once after a Write went out
}

func (c *faultConn) Write(b []byte) (int, error) {
	if c.failWrite.CompareAndSwap(true, false) {
		return 0, syscall.EPIPE
	}
	n, err := c.Conn.Write(b)
	if f := c.afterWrite; f != nil {
		c.afterWrite = nil
		f()
	}
	return n, err
}

// heldFaultConn is a faultConn that also writes a request and reads its
// answer in one call, as a bare TCP connection's rawsock.Conn does: the
// pool then holds each request until its read, and meets a failed write
// there.
type heldFaultConn struct{ *faultConn }

func (c heldFaultConn) WriteThenRead(w, r []byte) (sent, n int, err error) {
	if sent, err = c.Write(w); err != nil {
		return sent, 0, err
	}
	n, err = c.Read(r)
	return sent, n, err
}

// faultPool is a pool of one connection to addr, warm, whose connections
// are faultConns (heldFaultConns when held); dialed lists them in the
// order they were dialed.
func faultPool(t *testing.T, addr string, held bool) (p *hotpath.Pool, dialed func() []*faultConn) {
	t.Helper()
	var mu sync.Mutex
	var conns []*faultConn
	p = hotpath.New(hotpath.Options{Size: 1, Timeout: 10 * time.Second, Dial: func(ctx context.Context) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		fc := &faultConn{Conn: nc}
		mu.Lock()
		conns = append(conns, fc)
		mu.Unlock()
		if held {
			return heldFaultConn{fc}, nil
		}
		return fc, nil
	}})
	t.Cleanup(func() { p.Close() })
	if err := p.Warm(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	return p, func() []*faultConn {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(conns)
	}
}

// A write that failed before any byte went out never reached the server,
// so the decision is sent again on a new connection, and runs once:
// written at once, or held until its read.
func TestUnsentWriteIsRetried(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			key := fmt.Sprintf("unsent-%v", held)
			p, dialed := faultPool(t, srv.Addr, held)
			dialed()[0].failWrite.Store(true)
			if got := call(t, p, key, 1, 0); got[0] != 1 {
				t.Fatalf("call = %v, want the first increment", got)
			}
			if n := len(dialed()); n != 2 {
				t.Fatalf("%d connections dialed, want 2 (the warm one and its replacement)", n)
			}
			if v, err := srv.Client(t).Get(context.Background(), key).Int(); err != nil || v != 1 {
				t.Fatalf("%s = %d (%v), want 1", key, v, err)
			}
		})
	}
}

// A decision whose connection died after the request went out is not sent
// again: the server may have run it, and would count it twice. The error
// is the caller's, and the pool recovers for the next call: written at
// once, or held until its read.
func TestSentRequestIsNotResent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			key := fmt.Sprintf("sent-%v", held)
			p, dialed := faultPool(t, srv.Addr, held)
			call(t, p, key, 1, 0) // loads the script
			fc := dialed()[0]
			fc.afterWrite = func() {
				// The server ran the script; its reply is lost with the connection.
				deadline := time.Now().Add(10 * time.Second)
				for v, _ := admin.Get(ctx, key).Int(); v != 2; v, _ = admin.Get(ctx, key).Int() {
					if time.Now().After(deadline) {
						t.Error("the server never ran the second call")
						break
					}
					time.Sleep(time.Millisecond)
				}
				fc.Conn.Close()
			}
			var a hotpath.Args
			a.Key(key)
			a.Int(1)
			a.Int(0)
			if r, err := p.EvalInts(ctx, incr, &a, nil); err == nil {
				t.Fatalf("call on a connection lost after the write = %v, want its error", r)
			}
			if v, err := admin.Get(ctx, key).Int(); err != nil || v != 2 {
				t.Fatalf("%s = %d (%v), want 2: the lost call ran once", key, v, err)
			}
			if got := call(t, p, key, 1, 0); got[0] != 3 {
				t.Fatalf("next call = %v, want 3", got)
			}
		})
	}
}

// A decision whose connection the server itself drops after running it,
// before its reply goes out, is not sent again: the real server, no fake
// connection. A blocker's script holds the server while the pool's
// EVALSHA and then an admin's CLIENT KILL of the pool's connection queue
// up behind it; when the blocker ends, Redis runs the two in that order
// within one turn of its event loop, so the EVALSHA's increment is made
// and its reply is dropped with the client before it is written. The
// call must fail (rueidis with retries on would send it again on a new
// connection and succeed, counting it twice), the counter must show one
// run, and the next call runs on a new connection.
func TestKilledMidRequestIsNotResent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	o := *admin.Options() // a copy: the admin's own stays unnamed
	o.PoolSize = 1
	o.ClientName = "victim"
	o.ReadTimeout = 10 * time.Second
	p, _ := hotpath.FromClient(redis.NewClient(&o))
	t.Cleanup(func() { p.Close() })
	call(t, p, "midway", 1, 0) // loads the script and opens the connection
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for line := range strings.Lines(list) {
		if strings.Contains(line, " name=victim ") {
			id = strings.TrimPrefix(strings.Fields(line)[0], "id=")
		}
	}
	if id == "" {
		t.Fatalf("no client named victim in\n%s", list)
	}
	// The blocker and the killer are plain connections, open before the
	// blocker starts: a client library's connection set-up (HELLO), or a
	// fresh connection of its pool, would queue behind the blocker and
	// let the victim's reply out before the kill.
	dialRaw := func() net.Conn {
		nc, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		return nc
	}
	blocker, killer := dialRaw(), dialRaw()
	send := func(nc net.Conn, args ...string) {
		b := fmt.Appendf(nil, "*%d\r\n", len(args))
		for _, a := range args {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	reply := func(nc net.Conn) string {
		line, err := bufio.NewReader(nc).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(line)
	}
	for _, nc := range []net.Conn{killer, blocker} {
		send(nc, "PING")
		if r := reply(nc); r != "+PONG" {
			t.Fatalf("PING answered %q", r)
		}
	}
	send(blocker, "EVAL", `local t = redis.call('TIME') local start = t[1] * 1e6 + t[2]
		repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - start > 600000 return 1`, "0")
	time.Sleep(150 * time.Millisecond) // the blocker's script is running
	decided := make(chan error, 1)
	go func() {
		var a hotpath.Args
		a.Key("midway")
		a.Int(1)
		a.Int(0)
		_, err := p.EvalInts(ctx, incr, &a, nil)
		decided <- err
	}()
	time.Sleep(150 * time.Millisecond) // the EVALSHA waits in the server's socket buffer
	send(killer, "CLIENT", "KILL", "ID", id)
	if r := reply(blocker); r != ":1" {
		t.Fatalf("blocker answered %q", r)
	}
	if r := reply(killer); r != ":1" {
		t.Fatalf("CLIENT KILL ID %s answered %q, want :1", id, r)
	}
	if err := <-decided; err == nil {
		v, _ := admin.Get(ctx, "midway").Int()
		t.Fatalf("the decision whose connection was killed after it ran succeeded (midway = %d): it was sent again, or the kill came after its reply", v)
	} else {
		t.Logf("the killed decision: %v", err)
	}
	if v, err := admin.Get(ctx, "midway").Int(); err != nil || v != 2 {
		t.Fatalf("midway = %d (%v), want 2: the killed call ran once (0 would mean the kill came first)", v, err)
	}
	if got := call(t, p, "midway", 1, 0); got[0] != 3 {
		t.Fatalf("next call = %v, want 3", got)
	}
}

// killNamed kills every connection named name and says how many.
func killNamed(t *testing.T, admin *redis.Client, name string) int {
	t.Helper()
	ctx := context.Background()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for line := range strings.Lines(list) {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
		if n, err := admin.Do(ctx, "CLIENT", "KILL", "ID", id).Int(); err != nil || n != 1 {
			t.Fatalf("CLIENT KILL ID %s: %d, %v", id, n, err)
		}
		killed++
	}
	return killed
}
