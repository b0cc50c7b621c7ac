package redistest

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// NoHandshake is a loopback address whose TCP handshake never completes,
// as behind a firewall that drops packets: the listening socket's accept
// queue (backlog 0) is filled and never drained, so Linux drops every
// further SYN and a dial waits until its timeout. The socket closes when
// the test ends.
func NoHandshake(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// Fill the queue: the first dial that times out found it full.
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatalf("%s: the accept queue of backlog 0 took 8 connections; cannot make a handshake that never completes", addr)
	return ""
}
