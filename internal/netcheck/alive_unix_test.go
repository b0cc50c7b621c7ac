//go:build unix

package netcheck

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// What the peer did to a connection decides what a probe says, whatever
// the time since the connection was last used.
func TestProbeSeesWhatThePeerDid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		peer  func(t *testing.T, server net.Conn)
		alive bool
	}{
		{"open and quiet", func(*testing.T, net.Conn) {}, true},
		{"closed", func(t *testing.T, server net.Conn) { server.Close() }, false},
		{"reset", func(t *testing.T, server net.Conn) {
			// SO_LINGER 0: close sends RST instead of FIN.
			if err := server.(*net.TCPConn).SetLinger(0); err != nil {
				t.Fatal(err)
			}
			server.Close()
		}, false},
		{"unread byte", func(t *testing.T, server net.Conn) {
			if _, err := server.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client, server := loopback(t)
			p := NewProbe(client)
			if !p.Alive() {
				t.Fatal("a fresh connection reported dead")
			}
			tt.peer(t, server)
			if tt.alive {
				if !p.Alive() {
					t.Fatal("reported dead")
				}
				return
			}
			// The peer's FIN, RST or byte crosses loopback on its own
			// time; the probe must see it once it has arrived.
			deadline := time.Now().Add(10 * time.Second)
			for p.Alive() {
				if time.Now().After(deadline) {
					t.Fatal("still reported alive after 10s")
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// A read deadline does not make an open connection look dead, and the
// probe leaves it as it found it, passed or to come: pools probe after
// their request's client set the request's deadline, and one the probe
// cleared let that request's read wait for as long as the server stayed
// silent.
func TestProbeKeepsTheReadDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		deadline time.Duration // from now
	}{
		{"passed", -time.Millisecond},
		{"to come", 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, _ := loopback(t)
			if err := client.SetReadDeadline(time.Now().Add(tc.deadline)); err != nil {
				t.Fatal(err)
			}
			if !NewProbe(client).Alive() {
				t.Fatal("an open, quiet connection with a read deadline reported dead")
			}
			// Bounds the read below if the probe cleared the deadline.
			stop := time.AfterFunc(5*time.Second, func() { client.Close() })
			defer stop.Stop()
			if _, err := client.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read after the probe: %v, want the deadline's timeout", err)
			}
		})
	}
}

// A check on the request path allocates nothing.
func TestProbeAllocatesNothing(t *testing.T) {
	client, _ := loopback(t)
	p := NewProbe(client)
	if n := testing.AllocsPerRun(100, func() { p.Alive() }); n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}
