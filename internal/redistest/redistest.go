// Package redistest starts real redis-server processes for tests: on free
// loopback ports, each in its own temporary directory, stopped (by pid) when
// the test ends, also when it fails. A missing redis-server fails the test
// with an instruction; it is never a skip.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one running redis-server.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int
	Dir  string
	cmd  *exec.Cmd
}

// URL is redis://Addr.
func (s *Server) URL() string { return "redis://" + s.Addr }

// Client returns a new client for the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// Binary returns the path of redis-server, failing the test when absent.
func Binary(t testing.TB) string {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found on PATH: run `make test` (it installs Debian's redis-server) or `apt-get install redis-server`")
	}
	return p
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start runs a redis-server with the given extra config directives
// ("--appendonly", "no", ...) and waits until it answers PING.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	var lastErr error
	for try := 0; try < 5; try++ {
		port := FreePort(t)
		s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port, Dir: dir}
		base := []string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--dir", dir, "--save", "", "--appendonly", "no",
			"--pidfile", filepath.Join(dir, "redis.pid"),
			"--logfile", filepath.Join(dir, "redis.log"),
		}
		s.cmd = exec.Command(bin, append(base, args...)...)
		s.cmd.Dir = dir
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		t.Cleanup(func() { s.Stop() })
		if lastErr = waitPing(s.Addr, 5*time.Second); lastErr == nil {
			return s
		}
		s.Stop()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	t.Fatalf("redis-server did not answer: %v\n%s", lastErr, tail(log))
	return nil
}

// Stop kills the server and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

func waitPing(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
