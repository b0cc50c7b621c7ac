package resp_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/resp"
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
				o := admin.Options()
				o.PoolSize = size
				p, _ := resp.FromClient(redis.NewClient(o))
				t.Cleanup(func() { p.Close() })
				if err := p.Warm(ctx, size); err != nil {
					t.Fatalf("Warm: %v", err)
				}
				// Every normal client but the admin's own connection: the
				// pool's, all of them.
				killed, err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal").Int()
				if err != nil || killed != size {
					t.Fatalf("CLIENT KILL TYPE normal: %d killed, %v; want the pool's %d", killed, err, size)
				}
				time.Sleep(idle)
				const calls = 3 * size
				failed := 0
				for range calls {
					var a resp.Args
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
	p, _ := resp.FromClient(redis.NewClient(o))
	t.Cleanup(func() { p.Close() })
	var a resp.Args
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
