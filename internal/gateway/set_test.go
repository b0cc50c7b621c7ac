package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

var epoch = time.UnixMilli(1_764_000_000_000)

type fakeNow struct{ ns atomic.Int64 }

func newFakeNow(t time.Time) *fakeNow {
	f := &fakeNow{}
	f.ns.Store(t.UnixNano())
	return f
}

func (f *fakeNow) Now() time.Time      { return time.Unix(0, f.ns.Load()) }
func (f *fakeNow) Add(d time.Duration) { f.ns.Add(int64(d)) }

func clientsOf(addr string, honoured bool) func() redis.UniversalClient {
	return func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: honoured})
	}
}

func newSet(t *testing.T, o gateway.Options) *gateway.Set {
	t.Helper()
	s, err := gateway.New(context.Background(), o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// admittedThrough sends n requests for id through every gateway of s and
// returns how many each admitted.
func admittedThrough(t *testing.T, s *gateway.Set, id string, n int) []int {
	t.Helper()
	out := make([]int, len(s.Names()))
	for g := range out {
		for i := 0; i < n; i++ {
			d, err := s.Decide(context.Background(), g, 0, id)
			if err != nil {
				t.Fatalf("gateway %d: %v", g, err)
			}
			if d.Allowed {
				out[g]++
			}
		}
	}
	return out
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestLocalDesignsAdmitNTimesL: each gateway's memory holds its own count,
// so N gateways admit N x L for one identity in one window.
func TestLocalDesignsAdmitNTimesL(t *testing.T) {
	t.Parallel()
	const N, L = 4, 5
	for _, algo := range []string{design.LocalFixedWindow, design.LocalTokenBucket} {
		t.Run(algo, func(t *testing.T) {
			now := newFakeNow(epoch)
			s := newSet(t, gateway.Options{N: N, Limiter: limiter.Config{Algorithm: algo, Limit: rate.Limit{Count: L, Window: time.Second}}, Now: now.Now})
			got := admittedThrough(t, s, "ann", 2*L)
			for g, n := range got {
				if n != L {
					t.Fatalf("gateway %d admitted %d, want %d", g, n, L)
				}
			}
			if sum(got) != N*L {
				t.Fatalf("admitted %d in one window, want N x L = %d", sum(got), N*L)
			}
			if st := s.Stats(); st.ByPath["local"] != int64(N*2*L) {
				t.Fatalf("stats %+v: want %d decisions by local", st, N*2*L)
			}
		})
	}
}

// patient is one endpoint whose policy waits for Redis far longer than the
// default: the tests that count admissions through Redis are not about its
// latency, and a first call (dial, script load) on a loaded machine can
// take longer than the default timeout.
var patient = []gateway.Endpoint{{Name: "default", Share: 1, Policy: limiter.Policy{Timeout: 10 * time.Second}}}

// TestSharedDesignsAdmitL: the same traffic through a Redis design admits L
// in all, however many gateways.
func TestSharedDesignsAdmitL(t *testing.T) {
	t.Parallel()
	const N, L = 4, 5
	srv := redistest.Start(t)
	now := newFakeNow(epoch)
	s := newSet(t, gateway.Options{N: N, Limiter: limiter.Config{Algorithm: design.RedisClockWindow, Limit: rate.Limit{Count: L, Window: time.Second}},
		NewClient: clientsOf(srv.Addr, false), Now: now.Now, Endpoints: patient})
	if got := sum(admittedThrough(t, s, "ben", 2*L)); got != L {
		t.Fatalf("admitted %d through %d gateways, want %d", got, N, L)
	}
}

// TestClockSkewAcrossGateways: offsets are spread over [-skew, +skew]; a
// design that trusts gateway clocks admits more than L around a boundary
// when clocks disagree, and does not when the script reads Redis TIME.
func TestClockSkewAcrossGateways(t *testing.T) {
	t.Parallel()
	const N, L = 3, 5
	srv := redistest.Start(t)
	for _, tt := range []struct {
		clock string
		want  int
	}{{limiter.ClockGateway, 2 * L}, {limiter.ClockRedis, L}} {
		t.Run(tt.clock, func(t *testing.T) {
			// 50ms before a boundary: gw-00 (-100ms) and gw-01 (0) are in one
			// window, gw-02 (+100ms) already in the next one. An hour-long
			// window keeps Redis's real clock away from its boundaries.
			now := newFakeNow(epoch.Add(time.Hour - 50*time.Millisecond))
			s := newSet(t, gateway.Options{N: N, Limiter: limiter.Config{Algorithm: design.RedisClockWindow, Limit: rate.Limit{Count: L, Window: time.Hour}, Clock: tt.clock, Prefix: tt.clock + ":"},
				NewClient: clientsOf(srv.Addr, false), ClockSkew: 100 * time.Millisecond, Now: now.Now, Endpoints: patient})
			if s.Offset(0) != -100*time.Millisecond || s.Offset(1) != 0 || s.Offset(2) != 100*time.Millisecond {
				t.Fatalf("offsets %v %v %v, want -100ms 0 +100ms", s.Offset(0), s.Offset(1), s.Offset(2))
			}
			if got := sum(admittedThrough(t, s, "cleo", 2*L)); got != tt.want {
				t.Fatalf("admitted %d at one instant, want %d", got, tt.want)
			}
		})
	}
}

// leasedSet is n leasing gateways (30/1m, slices of 5) on a real Redis,
// each of which has leased a slice for id and spent 1 of it.
func leasedSet(t *testing.T, n int, id string) *gateway.Set {
	t.Helper()
	srv := redistest.Start(t)
	now := newFakeNow(epoch)
	s := newSet(t, gateway.Options{N: n, Limiter: limiter.Config{Algorithm: design.Leasing, Limit: rate.Limit{Count: 30, Window: time.Minute}, Lease: limiter.LeaseConfig{Size: 5}},
		NewClient: clientsOf(srv.Addr, false), Now: now.Now, Endpoints: patient})
	admittedThrough(t, s, id, 1)
	return s
}

// TestKillStrandsLease: a killed gateway answers with an error and the
// slice it held is reported stranded.
func TestKillStrandsLease(t *testing.T) {
	t.Parallel()
	s := leasedSet(t, 3, "dora")
	s.Kill(1)
	if _, err := s.Decide(context.Background(), 1, 0, "dora"); !errors.Is(err, gateway.ErrGatewayDown) {
		t.Fatalf("killed gateway answered %v, want ErrGatewayDown", err)
	}
	st := s.Stats()
	if st.LeaseStranded != 4 || st.LeaseUnspent != 12 || st.LeaseGranted != 15 || st.ByPath["lease"] != 3 || st.Errors != 1 {
		t.Fatalf("stats %+v: want 4 stranded, 12 unspent of 15 granted, 3 by lease, 1 error", st)
	}
}

// TestReviveRestartsGateway: a revived gateway answers again, as a
// restarted process: with a fresh lease (a new grant from Redis), while
// the slice its earlier life stranded still counts as stranded. Reviving
// a gateway that is up changes nothing.
func TestReviveRestartsGateway(t *testing.T) {
	t.Parallel()
	s := leasedSet(t, 2, "fay")
	if err := s.Revive(0); err != nil {
		t.Fatalf("revive a gateway that is up: %v", err)
	}
	s.Kill(1)
	if err := s.Revive(1); err != nil {
		t.Fatalf("revive: %v", err)
	}
	d, err := s.Decide(context.Background(), 1, 0, "fay")
	if err != nil || !d.Allowed || d.By != decision.ByLease {
		t.Fatalf("revived gateway answered %+v, %v; want allowed from a lease", d, err)
	}
	st := s.Stats()
	if st.LeaseStranded != 4 || st.LeaseGranted != 15 || st.LeaseSpent != 3 {
		t.Fatalf("stats %+v: want 4 stranded by the first life, 15 granted (5 + 5 + 5 for the new life), 3 spent", st)
	}
}

// TestFailoverDetected: the gateways talk to Redis through a forwarder; it
// is switched from the primary to an empty server, as a failover to a
// replica that missed the writes would. Every gateway notices the marker is
// gone (or rewritten) once, the on_failover: deny endpoint denies for one
// window (failover-deny), the trust endpoint carries on, and after the window
// the deny endpoint is decided by Redis again.
func TestFailoverDetected(t *testing.T) {
	t.Parallel()
	const N = 3
	const window = 600 * time.Millisecond
	primary := redistest.Start(t)
	empty := redistest.Start(t)
	fwd := newForwarder(t, primary.Addr)
	s := newSet(t, gateway.Options{
		N:       N,
		Limiter: limiter.Config{Algorithm: design.RedisFixedWindow, Limit: rate.Limit{Count: 1000, Window: window}},
		Endpoints: []gateway.Endpoint{
			{Name: "login", Share: 0.5, Policy: limiter.Policy{OnError: limiter.OnErrorClosed, OnFailover: limiter.OnFailoverDeny, CheckEvery: 20 * time.Millisecond, Timeout: 300 * time.Millisecond}},
			{Name: "feed", Share: 0.5, Policy: limiter.Policy{OnError: limiter.OnErrorOpen, Timeout: 300 * time.Millisecond}},
		},
		NewClient: clientsOf(fwd.Addr(), true),
	})
	ctx := context.Background()
	if n := primary.Client(t).Exists(ctx, "rl:marker").Val(); n != 1 {
		t.Fatal("no failover marker on the primary after start")
	}
	for g := 0; g < N; g++ {
		for ep := 0; ep < 2; ep++ {
			if d, err := s.Decide(ctx, g, ep, "eve"); err != nil || d.By != decision.ByRedis {
				t.Fatalf("before failover gw %d ep %d: %+v, %v", g, ep, d, err)
			}
		}
	}
	fwd.Retarget(empty.Addr)
	denied := make([]time.Time, N)
	deadline := time.Now().Add(5 * time.Second)
	for seen := 0; seen < N && time.Now().Before(deadline); {
		for g := 0; g < N; g++ {
			if !denied[g].IsZero() {
				continue
			}
			d, err := s.Decide(ctx, g, 0, "eve")
			if err == nil && !d.Allowed && d.By == decision.ByFailoverDeny {
				denied[g] = time.Now()
				seen++
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	for g, at := range denied {
		if at.IsZero() {
			t.Fatalf("gateway %d never denied by failover-deny after the failover (stats %+v)", g, s.Stats())
		}
	}
	for g := 0; g < N; g++ {
		if d, err := s.Decide(ctx, g, 1, "eve"); err != nil || !d.Allowed || d.By != decision.ByRedis {
			t.Fatalf("trust endpoint on gw %d after failover: %+v, %v; want allowed by redis", g, d, err)
		}
	}
	if st := s.Stats(); st.Failovers != N {
		t.Fatalf("%d failovers detected, want one per gateway (%d)", st.Failovers, N)
	}
	if n := empty.Client(t).Exists(ctx, "rl:marker").Val(); n != 1 {
		t.Fatal("the new primary was not re-marked")
	}
	// one window after each gateway's detection, Redis decides again
	time.Sleep(window + 100*time.Millisecond)
	for g := 0; g < N; g++ {
		if d, err := s.Decide(ctx, g, 0, "eve"); err != nil || d.By != decision.ByRedis {
			t.Fatalf("gw %d one window after the failover: %+v, %v; want decided by redis", g, d, err)
		}
	}
	if st := s.Stats(); st.Failovers != N {
		t.Fatalf("%d failovers detected in all, want still %d", st.Failovers, N)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	l := rate.Limit{Count: 5, Window: time.Second}
	closed := redistest.FreePort(t)
	tests := []struct {
		name string
		o    gateway.Options
		code exitcode.Code
	}{
		{"no gateways", gateway.Options{N: 0, Limiter: limiter.Config{Algorithm: design.LocalFixedWindow, Limit: l}}, exitcode.Usage},
		{"unknown algorithm", gateway.Options{N: 1, Limiter: limiter.Config{Algorithm: "magic", Limit: l}}, exitcode.Usage},
		{"no client for a Redis design", gateway.Options{N: 1, Limiter: limiter.Config{Algorithm: design.RedisGCRA, Limit: l}}, exitcode.Usage},
		{"bad policy", gateway.Options{N: 1, Limiter: limiter.Config{Algorithm: design.LocalFixedWindow, Limit: l}, Endpoints: []gateway.Endpoint{{Name: "x", Policy: limiter.Policy{OnError: "shrug"}}}}, exitcode.Usage},
		{"unreachable Redis", gateway.Options{N: 2, Limiter: limiter.Config{Algorithm: design.RedisGCRA, Limit: l},
			NewClient: clientsOf(fmt.Sprintf("127.0.0.1:%d", closed), true), Endpoints: []gateway.Endpoint{{Name: "x", Policy: limiter.Policy{Timeout: 100 * time.Millisecond}}}}, exitcode.Unreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := gateway.New(context.Background(), tt.o)
			if err == nil {
				s.Close()
				t.Fatal("New succeeded, want an error")
			}
			if got := exitcode.Of(err); got != tt.code {
				t.Fatalf("error %v has code %d, want %d", err, got, tt.code)
			}
		})
	}
}

func TestDecideBounds(t *testing.T) {
	t.Parallel()
	s := newSet(t, gateway.Options{N: 2, Limiter: limiter.Config{Algorithm: design.LocalFixedWindow, Limit: rate.Limit{Count: 1, Window: time.Second}}})
	if got := s.Names(); len(got) != 2 || got[0] != "gw-00" || got[1] != "gw-01" {
		t.Fatalf("Names() = %v", got)
	}
	if got := s.Endpoints(); len(got) != 1 || got[0] != "default" {
		t.Fatalf("Endpoints() = %v, want [default]", got)
	}
	for _, c := range [][2]int{{-1, 0}, {2, 0}, {0, 1}, {0, -1}} {
		if _, err := s.Decide(context.Background(), c[0], c[1], "x"); err == nil {
			t.Errorf("Decide(gateway %d, endpoint %d) succeeded", c[0], c[1])
		}
	}
}

// After Warm, requests that come at once through every gateway find their
// connections open and their script loaded: Redis accepts no connection and
// runs no EVAL (the NOSCRIPT fallback) while they are decided. redis-get-incr
// has no script, and its three round trips share the warmed pool too, as
// leasing's grants do.
func TestWarmOpensConnectionsAndLoadsScripts(t *testing.T) {
	t.Parallel()
	for _, algo := range []string{design.RedisFixedWindow, design.RedisSlidingLog, design.RedisGetIncr, design.Leasing} {
		t.Run(algo, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const N, conns = 3, 4
			srv := redistest.Start(t)
			admin := srv.Client(t)
			s := newSet(t, gateway.Options{N: N, Limiter: limiter.Config{Algorithm: algo, Limit: rate.Limit{Count: 1000, Window: time.Minute}},
				NewClient: clientsOf(srv.Addr, true), Endpoints: patient})
			// Only what runs from Warm on counts: New's write check is an EVAL.
			if err := admin.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := s.Warm(ctx, conns); err != nil {
				t.Fatalf("Warm: %v", err)
			}
			accepted := redistest.Accepted(t, admin)
			var wg sync.WaitGroup
			for g := range N {
				for i := range conns {
					wg.Go(func() {
						if _, err := s.Decide(ctx, g, 0, fmt.Sprint("id-", i)); err != nil {
							t.Error(err)
						}
					})
				}
			}
			wg.Wait()
			if now := redistest.Accepted(t, admin); now != accepted {
				t.Errorf("connections accepted went from %s to %s during %d decisions at once per warm gateway", accepted, now, conns)
			}
			stats, err := admin.Info(ctx, "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(stats, "cmdstat_eval:") {
				t.Errorf("EVAL ran after Warm (the script was not loaded):\n%s", stats)
			}
		})
	}
}

// TestNewRefusesRedisOutOfMemory: a Redis that answers PING but refuses
// every write (maxmemory, noeviction) is found before any traffic, as
// exit 3 naming OOM, instead of a run whose every request its failure
// policy decided.
func TestNewRefusesRedisOutOfMemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	redistest.FillPastMaxmemory(t, srv)
	_, err := gateway.New(context.Background(), gateway.Options{N: 2, Limiter: limiter.Config{Algorithm: design.RedisFixedWindow, Limit: rate.Limit{Count: 10, Window: time.Second}},
		NewClient: clientsOf(srv.Addr, true)})
	if exitcode.Of(err) != exitcode.Unreachable || !strings.Contains(fmt.Sprint(err), "out of memory (OOM)") {
		t.Fatalf("New on a Redis out of memory: %v (exit %d), want exit 3 naming OOM", err, exitcode.Of(err))
	}
}
