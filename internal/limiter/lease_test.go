package limiter

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

func newLeases(t *testing.T, b backend, n int, cfg Config, clock Clock) []*Lease {
	t.Helper()
	out := make([]*Lease, n)
	for i := range out {
		c := b.client
		if b.server != nil {
			c = b.server.Client(t)
		}
		out[i] = mustNew(t, cfg, c, clock).(*Lease)
	}
	return out
}

// TestLeaseBound: gateways spending leased slices admit at most the budget
// plus one slice per gateway in any window, Redis never grants more than
// the budget per window, and the counters balance: what the gateways say
// they were granted is what Redis recorded, and every admission was spent
// from a slice.
func TestLeaseBound(t *testing.T) {
	// A minute's windows on the fake clock: the ledger keys' TTL (one
	// window) runs in real time on the server, and must outlast the test.
	t.Parallel()
	const L, size, gateways, windows = 20, 3, 4, 4
	b := realBackend(t)
	cfg := Config{Algorithm: design.Leasing, Clock: ClockGateway, Limit: rate.Limit{Count: L, Window: time.Minute}, Lease: LeaseConfig{Size: size}}
	clock := newFakeClock(epoch)
	ls := newLeases(t, b, gateways, cfg, clock.Clock())
	ctx := context.Background()
	var admitted, byLease int64
	for w := 0; w < windows; w++ {
		n := 0
		for i := 0; i < 3*L; i++ {
			d, err := ls[i%gateways].Allow(ctx, "mia", 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				n++
				if d.By == decision.ByLease {
					byLease++
				}
			}
			if i%5 == 0 {
				runtime.Gosched() // let top-ups land now and then
			}
		}
		if n > L+size*gateways {
			t.Fatalf("window %d admitted %d, above budget %d + %d slices of %d", w, n, L, gateways, size)
		}
		// Demand is three times the budget, so every slice granted early is
		// spent; only a top-up still in flight when the window's requests
		// end (one per gateway at most) can go unspent.
		if n < L-size*gateways {
			t.Fatalf("window %d admitted only %d of budget %d (at most %d slices of %d unspent)", w, n, L, gateways, size)
		}
		granted, err := b.client.Get(ctx, Keys(cfg, "mia", clock.Now())[0]).Int64()
		if err != nil || granted > L {
			t.Fatalf("window %d: Redis granted %d, %v; want at most %d", w, granted, err, L)
		}
		admitted += int64(n)
		clock.Add(time.Minute)
	}
	var st LeaseStats
	for _, l := range ls {
		l.Close() // wait for top-ups in flight
		s := l.Stats()
		st.Granted += s.Granted
		st.Spent += s.Spent
	}
	var ledger int64
	for w := 0; w <= windows; w++ {
		key := fmt.Sprintf("rl:lease:{mia}:%d", epoch.UnixMilli()/60000+int64(w))
		if v, err := b.client.Get(ctx, key).Result(); err == nil {
			n, _ := strconv.ParseInt(v, 10, 64)
			ledger += n
		}
	}
	if st.Granted != ledger {
		t.Errorf("gateways counted %d granted, Redis recorded %d", st.Granted, ledger)
	}
	if st.Spent != admitted || byLease != admitted {
		t.Errorf("spent %d, admitted %d (by lease %d): want all equal", st.Spent, admitted, byLease)
	}
}

// TestLeaseKillStrands: a killed gateway's slice is reported stranded.
func TestLeaseKillStrands(t *testing.T) {
	t.Parallel()
	b := miniBackend(t, epoch)
	cfg := Config{Algorithm: design.Leasing, Clock: ClockGateway, Limit: rate.Limit{Count: 10, Window: time.Second}, Lease: LeaseConfig{Size: 4}}
	clock := newFakeClock(epoch)
	l := newLeases(t, b, 1, cfg, clock.Clock())[0]
	if d, err := l.Allow(context.Background(), "ned", 1); err != nil || !d.Allowed || d.Remaining != 3 {
		t.Fatalf("first request: %+v, %v; want allowed with 3 left in the slice", d, err)
	}
	l.Kill()
	st := l.Stats()
	if st.Stranded != 3 || st.Held != 0 || st.Unspent() != 3 || st.Granted != 4 {
		t.Fatalf("after kill: %+v, want 3 stranded of 4 granted", st)
	}
}

// TestLeaseSpendsWithoutRedis: budget already leased is spent without the
// network, so it keeps admitting while Redis is down; only when the slice
// is empty does a request need Redis (and then fails). A window whose
// budget Redis said is gone is denied locally, also without the network.
func TestLeaseSpendsWithoutRedis(t *testing.T) {
	t.Parallel()
	t.Run("slice", func(t *testing.T) {
		b := realBackend(t)
		cfg := Config{Algorithm: design.Leasing, Clock: ClockGateway, Limit: rate.Limit{Count: 100, Window: time.Minute}, Lease: LeaseConfig{Size: 5, Timeout: 100 * time.Millisecond}}
		l := newLeases(t, b, 1, cfg, nil)[0]
		ctx := context.Background()
		if d, err := l.Allow(ctx, "olga", 1); err != nil || !d.Allowed {
			t.Fatalf("first request: %+v, %v", d, err)
		}
		b.server.Stop()
		for i := 0; i < 4; i++ {
			d, err := l.Allow(ctx, "olga", 1)
			if err != nil || !d.Allowed || d.By != decision.ByLease {
				t.Fatalf("request %d with Redis down: %+v, %v; want admitted from the slice", i, d, err)
			}
		}
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if _, err := l.Allow(short, "olga", 1); err == nil {
			t.Fatal("empty slice with Redis down: want an error")
		}
	})
	t.Run("spent window", func(t *testing.T) {
		b := realBackend(t)
		cfg := Config{Algorithm: design.Leasing, Clock: ClockGateway, Limit: rate.Limit{Count: 3, Window: time.Minute}, Lease: LeaseConfig{Size: 3}}
		l := newLeases(t, b, 1, cfg, nil)[0]
		ds := run(t, l, "pete", 4)
		if allowed(ds) != 3 || ds[3].By != decision.ByRedis || ds[3].RetryAfter <= 0 {
			t.Fatalf("decisions %+v: want 3 admitted, then denied by redis with a retry-after", ds)
		}
		b.server.Stop()
		d, err := l.Allow(context.Background(), "pete", 1)
		if err != nil || d.Allowed || d.By != decision.ByLease {
			t.Fatalf("spent window with Redis down: %+v, %v; want denied locally by lease", d, err)
		}
	})
}

// TestLeaseAdaptive: adaptive slices follow demand. Under heavy demand
// (10 per ms against 1000 per second) a top-up asks for a tenth of a
// window's worth, capped at the budget, far beyond the fixed default of
// 100; under light demand (10 per second) slices shrink to one or two, so
// a gateway holds almost nothing it does not need.
func TestLeaseAdaptive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		step    time.Duration // fake time between requests
		check   func(LeaseStats) bool
		explain string
	}{
		{"heavy", 100 * time.Microsecond, func(s LeaseStats) bool { return s.Granted >= 1000 }, "granted at least 1000"},
		{"light", 100 * time.Millisecond, func(s LeaseStats) bool { return s.Held <= 2 && s.Granted < 1000 }, "held at most 2, granted under 1000 (fixed slices of 100 would take 3000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := miniBackend(t, epoch)
			cfg := Config{Algorithm: design.Leasing, Clock: ClockGateway, Limit: rate.Limit{Count: 1000, Window: time.Second}, Lease: LeaseConfig{Adaptive: true}}
			clock := newFakeClock(epoch)
			l := newLeases(t, b, 1, cfg, clock.Clock())[0]
			for i := 0; i < 300; i++ {
				if _, err := l.Allow(context.Background(), "quin", 1); err != nil {
					t.Fatal(err)
				}
				clock.Add(tt.step)
				b.mini.FastForward(tt.step)
				l.wg.Wait() // the top-up each request may start
			}
			if st := l.Stats(); !tt.check(st) {
				t.Fatalf("after 300 requests: %+v, want %s", st, tt.explain)
			}
		})
	}
}
