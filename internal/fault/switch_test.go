package fault

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redistest"
)

// TestSwitchFaultsAgainstRealRedis: a client dialing through the switch is
// slowed by its latency, and with it down fails fast on its open
// connection and on new ones, then works again once it is up.
func TestSwitchFaultsAgainstRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	sw := NewSwitch()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Dialer: sw.Dial, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, MaxRetries: -1,
		DisableIdentity: true, Protocol: 2, PoolSize: 1, DialerRetries: 1})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("through the switch: %v", err)
	}

	t.Run("latency", func(t *testing.T) {
		sw.SetLatency(60 * time.Millisecond)
		defer sw.SetLatency(0)
		start := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < 60*time.Millisecond {
			t.Errorf("ping took %v with 60ms injected latency", el)
		}
	})

	t.Run("late command still reaches the server", func(t *testing.T) {
		// Longer than the client waits: the client times out, yet the
		// command arrives, as through a slow network or the proxy.
		sw.SetLatency(400 * time.Millisecond)
		err := c.Set(ctx, "late", "1", time.Minute).Err()
		sw.SetLatency(0)
		if err == nil || !isTimeout(err) {
			t.Fatalf("SET with 400ms latency and a 300ms timeout: %v, want a timeout", err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for admin.Exists(ctx, "late").Val() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the delayed SET never reached the server")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("down", func(t *testing.T) {
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		before := redistest.Connections(t, admin)
		sw.SetDown(true)
		start := time.Now()
		if err := c.Ping(ctx).Err(); err == nil {
			t.Fatal("ping on a connection the switch cut succeeded")
		}
		// More failures than the pool has connections: go-redis would stop
		// dialing for a second after that many failed dials.
		for range 5 {
			if err := c.Ping(ctx).Err(); !errors.Is(err, ErrDown) {
				t.Fatalf("ping on a new connection while down: %v, want ErrDown", err)
			}
		}
		if el := time.Since(start); el > 250*time.Millisecond {
			t.Errorf("errors took %v; a cut connection must fail at once", el)
		}
		// The server saw its client go: the switch closed the socket.
		deadline := time.Now().Add(2 * time.Second)
		for redistest.Connections(t, admin) >= before {
			if time.Now().After(deadline) {
				t.Fatalf("server still has %d clients after the cut (had %d)", redistest.Connections(t, admin), before)
			}
			time.Sleep(10 * time.Millisecond)
		}
		sw.SetDown(false)
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("right after the switch came up: %v", err)
		}
	})
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

// TestSwitchCutsEveryConnectionAtOnce: once the switch goes down, no byte
// passes on a connection it dialed before, even one whose socket it has
// not closed yet (closing them one by one can lag on a loaded machine):
// a reply already on its way is lost, a write fails, and the connection
// stays dead after the switch comes up again.
func TestSwitchCutsEveryConnectionAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	sw := NewSwitch()
	nc, err := sw.Dial(context.Background(), "tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// As though SetDown had not reached this connection's socket yet.
	sw.mu.Lock()
	clear(sw.conns)
	sw.mu.Unlock()
	if _, err := nc.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	// The reply is in the socket before the cut.
	time.Sleep(50 * time.Millisecond)
	sw.SetDown(true)
	if err := nc.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := nc.Read(buf); !errors.Is(err, ErrDown) {
		t.Errorf("read after the cut: %q, %v, want ErrDown", buf[:n], err)
	}
	if _, err := nc.Write([]byte("PING\r\n")); !errors.Is(err, ErrDown) {
		t.Errorf("write after the cut: %v, want ErrDown", err)
	}
	sw.SetDown(false)
	if _, err := nc.Write([]byte("PING\r\n")); !errors.Is(err, ErrDown) {
		t.Errorf("write on a connection cut before the switch came up: %v, want ErrDown", err)
	}
	fresh, err := sw.Dial(context.Background(), "tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.Write([]byte("PING\r\n")); err != nil {
		t.Fatalf("a connection dialed after the switch came up: %v", err)
	}
	if err := fresh.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := fresh.Read(buf); err != nil || string(buf[:n]) != "+PONG\r\n" {
		t.Errorf("reply on a fresh connection: %q, %v", buf[:n], err)
	}
}
