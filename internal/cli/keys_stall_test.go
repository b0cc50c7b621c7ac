package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redistest"
)

// stallProxy stands between rlctl and a real Redis. It forwards every
// request, and the first replies (counted in reads from Redis, which is
// one per reply when the client waits for each), then forwards no more
// replies on any connection: Redis still runs the commands, but rlctl
// hears nothing back, as from a server that stalls, or a network that
// drops its answers.
type stallProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	replies int       // replies still to forward
	stalled time.Time // when the first reply was held back
	conns   []net.Conn
}

func newStallProxy(t *testing.T, upstream string, replies int) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, replies: replies}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", upstream)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(server, client) }()
			go p.replyPipe(client, server)
		}
	}()
	return p
}

func (p *stallProxy) replyPipe(client, server net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		pass := p.replies > 0
		if pass {
			p.replies--
		} else if p.stalled.IsZero() {
			p.stalled = time.Now()
		}
		p.mu.Unlock()
		if pass {
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
	}
}

func (p *stallProxy) url() string { return "redis://" + p.ln.Addr().String() }

// stalledAt is when the first reply was held back (zero if none was).
func (p *stallProxy) stalledAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// TestKeysCommandsReportAStalledRedisWithinTheTimeout: Redis answers
// rlctl's PING, then stops answering, at every later point of each keys
// command and audit. Each must end with exit 3 within --timeout (plus a
// little) of the first unanswered call, and say it timed out; none may
// hang or retry the stalled call for several timeouts.
func TestKeysCommandsReportAStalledRedisWithinTheTimeout(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	pipe := c.Pipeline()
	for i := 0; i < 600; i++ {
		pipe.Set(ctx, fmt.Sprintf("rl:fw:{u%d}", i), i, 0)
		pipe.Set(ctx, fmt.Sprintf("app:session:%d", i), "x", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// Old rlctl took four to eight timeouts (go-redis retries, calls whose
	// failure it ignored): a slack of two timeouts tells them apart.
	const timeout = 500 * time.Millisecond
	const slack = 2 * timeout
	commands := [][]string{
		{"keys", "repair-ttl", "--limit", "10/1m", "--yes"},
		{"keys", "repair-ttl", "--limit", "10/1m", "--match", "rl:*", "--yes"},
		{"keys", "reset", "u7", "--yes"},
		{"keys", "inspect", "u7"},
		{"audit", "--refresh-interval", "10ms", "--limit", "10/1m"},
	}
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel() // each against its own proxy; the time is spent waiting
			// Stall after the PING, and after a few more replies: a stall
			// at each early step of the command (later ones are alike).
			for after := 1; after <= 5; after++ {
				proxy := newStallProxy(t, srv.Addr, after)
				f, errOut := testFactory(&syncBuffer{}, nil)
				start := time.Now()
				code := Run(f, append(args, "--redis", proxy.url(), "--timeout", timeout.String(), "--no-progress"), nil, noExit(t))
				end := time.Now()
				at := proxy.stalledAt()
				if at.IsZero() {
					// Finished within the replies let through: nothing stalled.
					continue
				}
				if code != int(exitcode.Unreachable) || !strings.Contains(errOut.String(), "timed out") {
					t.Errorf("after %d replies: exit %d, want 3 with \"timed out\": %s", after, code, errOut)
				}
				if strings.Contains(errOut.String(), "set TTLs on") && !strings.Contains(errOut.String(), "outcome unknown") {
					t.Errorf("after %d replies: repairs without an answer not reported as unknown: %s", after, errOut)
				}
				if took := end.Sub(at); took > timeout+slack {
					t.Errorf("after %d replies: gave up %v after Redis stopped answering (run took %v), want within %v + %v: %s",
						after, took.Round(time.Millisecond), end.Sub(start).Round(time.Millisecond), timeout, slack, errOut)
				}
			}
		})
	}
}
