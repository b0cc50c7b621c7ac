package limiter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

// TestLocalStateIsSwept: identities seen once do not stay in a gateway's
// memory forever (rlctl gateway serve runs for days), and the sweep never
// forgets state that still decides something.
func TestLocalStateIsSwept(t *testing.T) {
	t.Parallel()
	const n = 5000
	limit := rate.Limit{Count: 2, Window: time.Minute}
	clock := newFakeClock(epoch)
	fw := newLocalFixedWindow(limit, clock.Clock(), decision.ByLocal)
	tb := newLocalTokenBucket(limit, 2, clock.Clock())
	type sized interface {
		Limiter
		size() int
	}
	for _, l := range []sized{fw, tb} {
		ctx := context.Background()
		for i := 0; i < n; i++ {
			if _, err := l.Allow(ctx, fmt.Sprintf("once-%d", i), 1); err != nil {
				t.Fatal(err)
			}
		}
		// "busy" spends its whole allowance late in the window.
		clock.Add(50 * time.Second)
		for i := 0; i < 2; i++ {
			if d, _ := l.Allow(ctx, "busy", 1); !d.Allowed {
				t.Fatalf("%T: busy request %d denied", l, i)
			}
		}
		if got := l.size(); got != n+1 {
			t.Fatalf("%T: %d identities held, want %d", l, got, n+1)
		}
		// Past the window (and the bucket's refill time) for the
		// one-off identities, but not for busy's bucket.
		clock.Add(15 * time.Second)
		// Each shard sweeps when its first request comes: 1000 new
		// identities reach all 32 (missing one has odds of 1e-14).
		for i := 0; i < 1000; i++ {
			l.Allow(ctx, fmt.Sprintf("new-%d", i), 1)
		}
		if got := l.size(); got > 1001 {
			t.Fatalf("%T: %d identities held after their state expired, want at most the 1000 new ones and busy", l, got)
		}
		if tb, ok := l.(*localTokenBucket); ok {
			// busy's bucket refilled only 15 s × 2/60 s = 0.5 token: still
			// denied, so it must have survived the sweep.
			if d, _ := tb.Allow(ctx, "busy", 1); d.Allowed {
				t.Fatal("token bucket: busy was forgotten while its bucket was not full")
			}
		}
		clock.Add(time.Minute)
	}
}

// TestLeaseStateIsSwept: leasing drops the slices of identities whose
// window ended, and every unit of budget stays accounted for.
func TestLeaseStateIsSwept(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(epoch)
	b := miniBackend(t, clock.Now())
	cfg := Config{Algorithm: design.Leasing, Clock: ClockGateway, Limit: rate.Limit{Count: 10, Window: time.Minute}, Lease: LeaseConfig{Size: 2}}
	l := mustNew(t, cfg, b.client, clock.Clock()).(*Lease)
	ctx := context.Background()
	const n = 3000
	for i := 0; i < n; i++ {
		if d, err := l.Allow(ctx, fmt.Sprintf("once-%d", i), 1); err != nil || !d.Allowed {
			t.Fatalf("once-%d: %+v, %v", i, d, err)
		}
	}
	l.wg.Wait() // top-ups in flight land before the count
	if got := l.slices(); got != n {
		t.Fatalf("%d slices held, want %d", got, n)
	}
	b.advance(clock, 61*time.Second)
	for i := 0; i < 1000; i++ {
		if d, err := l.Allow(ctx, fmt.Sprintf("new-%d", i), 1); err != nil || !d.Allowed {
			t.Fatalf("new-%d: %+v, %v", i, d, err)
		}
	}
	l.wg.Wait()
	if got := l.slices(); got > 1000 {
		t.Fatalf("%d slices held after the window ended, want at most the 1000 new ones", got)
	}
	st := l.Stats()
	if st.Granted != st.Spent+st.Expired+st.Held+st.Stranded {
		t.Fatalf("budget unaccounted for: %+v", st)
	}
	if st.Spent != n+1000 || st.Expired == 0 {
		t.Fatalf("stats %+v: want %d spent and the once- slices' leftovers expired", st, n+1000)
	}
}
