//go:build unix

package rawsock_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/rawsock"
)

// loopback returns a wrapped client connection and the server's end.
func loopback(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	client := rawsock.Wrap(nc)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// A bare TCP connection is wrapped; anything else keeps its own Read and
// Write.
func TestWrapTakesOnlyBareTCP(t *testing.T) {
	client, _ := loopback(t)
	if _, ok := client.(*rawsock.Conn); !ok {
		t.Fatalf("a TCP connection came back as %T", client)
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if rawsock.Wrap(p1) != p1 {
		t.Fatal("a pipe was wrapped")
	}
}

// Bytes go both ways whole, a write larger than the socket's buffers
// included: it waits for room while the peer reads, as net.Conn's does.
func TestReadWriteRoundTrip(t *testing.T) {
	client, server := loopback(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(server, int64(len(big))))
		got <- b
	}()
	if n, err := client.Write(big); err != nil || n != len(big) {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("server read %d bytes, not what was written", len(b))
	}
	if _, err := server.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	n, err := io.ReadAtLeast(client, b, 4)
	if err != nil || string(b[:n]) != "pong" {
		t.Fatalf("Read: %q, %v", b[:n], err)
	}
}

// A read that waits past the connection's deadline ends with the same
// error net.Conn gives: a timeout, op "read", and the connection reads
// again once the deadline is cleared.
func TestReadDeadline(t *testing.T) {
	client, server := loopback(t)
	if err := client.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := client.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v, want a deadline error", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" || !strings.Contains(err.Error(), "i/o timeout") {
		t.Fatalf("error %q is not shaped as net.Conn's", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("returned after %v, before the deadline", d)
	}
	if err := client.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Read(make([]byte, 8)); n != 1 || err != nil {
		t.Fatalf("Read after the deadline was cleared: %d, %v", n, err)
	}
}

// The peer's close reads as io.EOF; its reset as the socket's error.
func TestPeerCloseAndReset(t *testing.T) {
	t.Run("close", func(t *testing.T) {
		client, server := loopback(t)
		server.Close()
		if _, err := client.Read(make([]byte, 8)); err != io.EOF {
			t.Fatalf("Read after the peer closed: %v, want io.EOF", err)
		}
	})
	t.Run("reset", func(t *testing.T) {
		client, server := loopback(t)
		if err := server.(*net.TCPConn).SetLinger(0); err != nil {
			t.Fatal(err)
		}
		server.Close()
		if _, err := client.Read(make([]byte, 8)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("Read after the peer reset: %v, want ECONNRESET", err)
		}
	})
}

// A connection closed here fails its reads and writes with net.ErrClosed.
func TestUseAfterClose(t *testing.T) {
	client, _ := loopback(t)
	client.Close()
	if _, err := client.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if _, err := client.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
}

// Goroutines may share a connection, as any net.Conn: concurrent Writes
// each go out whole, and concurrent Reads together take every byte once.
func TestConcurrentReadsAndWrites(t *testing.T) {
	client, server := loopback(t)
	const writers, each, size = 8, 200, 1000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := bytes.Repeat([]byte{byte('a' + w)}, size)
			for range each {
				if _, err := client.Write(msg); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	got := make([]byte, writers*each*size)
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(server, got); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := 0; i < len(got); i += size {
		if m := got[i : i+size]; !bytes.Equal(m, bytes.Repeat(m[:1], size)) {
			t.Fatalf("message at byte %d is interleaved with another: %q...", i, m[:40])
		}
	}

	var total atomic.Int64
	stop := time.Now().Add(10 * time.Second)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := make([]byte, 333)
			for total.Load() < int64(len(got)) && time.Now().Before(stop) {
				client.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				n, _ := client.Read(b)
				total.Add(int64(n))
			}
		}()
	}
	if _, err := server.Write(got); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if total.Load() != int64(len(got)) {
		t.Fatalf("the readers took %d bytes of %d", total.Load(), len(got))
	}
}

// A read and a write allocate nothing.
func TestNoAllocations(t *testing.T) {
	client, server := loopback(t)
	b := []byte("ping")
	rb := make([]byte, 4)
	n := testing.AllocsPerRun(100, func() {
		if _, err := client.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(server, rb); err != nil {
			t.Fatal(err)
		}
		if _, err := server.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, rb); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per round trip", n)
	}
}

// rawLoopback is loopback's client as the *Conn it is.
func rawLoopback(t *testing.T) (*rawsock.Conn, net.Conn) {
	t.Helper()
	client, server := loopback(t)
	return client.(*rawsock.Conn), server
}

// serverReads fails t unless the server's end reads want next.
func serverReads(t *testing.T, server net.Conn, want string) {
	t.Helper()
	b := make([]byte, len(want))
	if _, err := io.ReadFull(server, b); err != nil || string(b) != want {
		t.Fatalf("the server read %q, %v; want %q", b, err, want)
	}
}

// WriteThenRead sends the request whole and reads the answer, a request
// larger than the socket's buffers included (the rest is written once the
// peer reads), and allocates nothing.
func TestWriteThenRead(t *testing.T) {
	for _, size := range []int{4, 4 << 20} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			c, server := rawLoopback(t)
			req := bytes.Repeat([]byte("q"), size)
			go func() {
				// An echo of the request's last four bytes, once it is all in.
				b := make([]byte, size)
				if _, err := io.ReadFull(server, b); err == nil {
					server.Write(b[size-4:])
				}
			}()
			rb := make([]byte, 16)
			sent, n, err := c.WriteThenRead(req, rb)
			if err != nil || sent != size || string(rb[:n]) != "qqqq" {
				t.Fatalf("WriteThenRead: sent %d of %d, read %q, %v", sent, size, rb[:n], err)
			}
		})
	}
	t.Run("empty read", func(t *testing.T) {
		c, server := rawLoopback(t)
		if sent, n, err := c.WriteThenRead([]byte("ping"), nil); sent != 4 || n != 0 || err != nil {
			t.Fatalf("WriteThenRead into nothing: sent %d, read %d, %v; want the write alone", sent, n, err)
		}
		serverReads(t, server, "ping")
	})
	t.Run("allocations", func(t *testing.T) {
		c, server := rawLoopback(t)
		req, rb := []byte("ping"), make([]byte, 4)
		go io.Copy(server, server)
		n := testing.AllocsPerRun(100, func() {
			if _, _, err := c.WriteThenRead(req, rb); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Fatalf("%v allocations per exchange", n)
		}
	})
}

// A request that could not be written says how much went out (none) with
// the write's error; one written whose answer does not come in time ends
// with the read's deadline error, all of it sent.
func TestWriteThenReadErrors(t *testing.T) {
	t.Run("write", func(t *testing.T) {
		c, _ := rawLoopback(t)
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		sent, _, err := c.WriteThenRead([]byte("ping"), make([]byte, 4))
		var oe *net.OpError
		if sent != 0 || !errors.As(err, &oe) || oe.Op != "write" || !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("WriteThenRead on a connection shut for writing: sent %d, %v; want 0 and EPIPE from write", sent, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		c, server := rawLoopback(t)
		if err := c.SetDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		sent, _, err := c.WriteThenRead([]byte("ping"), make([]byte, 4))
		var oe *net.OpError
		if sent != 4 || !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &oe) || oe.Op != "read" {
			t.Fatalf("WriteThenRead with no answer: sent %d, %v; want 4 and a read deadline error", sent, err)
		}
		serverReads(t, server, "ping")
	})
	t.Run("closed", func(t *testing.T) {
		c, _ := rawLoopback(t)
		c.Close()
		sent, _, err := c.WriteThenRead([]byte("ping"), make([]byte, 4))
		if sent != 0 || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("WriteThenRead after Close: sent %d, %v", sent, err)
		}
	})
}

// A Held on a *Conn holds what is written until the read, which writes it
// whole and reads the answer; one on any other connection holds nothing;
// a held request that could not go out comes back as a WriteError saying
// none of it was sent.
func TestHeld(t *testing.T) {
	c, server := rawLoopback(t)
	h := rawsock.Hold(c)
	if !h.Write([]byte("pi")) || !h.Write([]byte("ng")) || !h.Pending() {
		t.Fatal("a Held on a *Conn did not hold the writes")
	}
	go func() {
		b := make([]byte, 4)
		if _, err := io.ReadFull(server, b); err == nil {
			server.Write(b)
		}
	}()
	rb := make([]byte, 4)
	if n, err := h.Read(rb); err != nil || string(rb[:n]) != "ping" || h.Pending() {
		t.Fatalf("Read: %q, %v, pending %v; want the echo of the whole request, nothing held", rb[:n], err, h.Pending())
	}

	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if ph := rawsock.Hold(p1); ph.Write([]byte("x")) || ph.Pending() {
		t.Fatal("a Held on a pipe held a write")
	}

	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	h.Write([]byte("ping"))
	_, err := h.Read(rb)
	var we *rawsock.WriteError
	if !errors.As(err, &we) || we.Sent != 0 || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Read of a request that could not go out: %v; want a WriteError, none sent, EPIPE", err)
	}
}
