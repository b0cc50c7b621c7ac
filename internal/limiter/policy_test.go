package limiter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestPolicyWhenRedisFails: with Redis stopped or stalled, every decision
// comes back within the policy's timeout (plus a margin for a loaded
// machine) and follows the policy: open admits, closed denies, local spends
// a tenth of the limit per gateway, and no policy reports the error. Both
// kinds of client are covered: one that honours context deadlines and one
// that does not (the policy then stops waiting on its own).
func TestPolicyWhenRedisFails(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	const margin = 400 * time.Millisecond
	limit := rate.Limit{Count: 20, Window: time.Minute}
	for _, honoured := range []bool{false, true} {
		for _, fault := range []string{"stopped", "paused"} {
			t.Run(fmt.Sprintf("%s/context-%v", fault, honoured), func(t *testing.T) {
				t.Parallel()
				s := redistest.Start(t)
				policies := []string{OnErrorOpen, OnErrorClosed, OnErrorLocal, ""}
				ls := make([]Limiter, len(policies))
				for i, p := range policies {
					c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: honoured})
					t.Cleanup(func() { c.Close() })
					inner := mustNew(t, Config{Algorithm: design.RedisFixedWindow, Limit: limit}, c, nil)
					ls[i] = WithPolicy(inner, Policy{OnError: p, Timeout: timeout}, limit, WithContextHonored(HonorsContext(c)))
					// warm up without the timeout (a loaded machine may take longer
					// the first time): the script is loaded, the pool holds a
					// connection
					if d, err := inner.Allow(context.Background(), "warm", 1); err != nil || d.By != decision.ByRedis {
						t.Fatalf("policy %q before the fault: %+v, %v", p, d, err)
					}
				}
				if HonorsContext(redis.NewClient(&redis.Options{ContextTimeoutEnabled: honoured})) != honoured {
					t.Fatal("HonorsContext does not read ContextTimeoutEnabled")
				}
				// The local fallback counts in windows aligned to the
				// clock (here each minute): three requests that straddled
				// a boundary would find a fresh window. They take at most
				// 3 × (timeout + margin); start clear of the next boundary.
				if next := time.Until(time.Now().Truncate(limit.Window).Add(limit.Window)); next < 3*(timeout+margin) {
					time.Sleep(next + 10*time.Millisecond)
				}
				pause := 1500 * time.Millisecond
				faultAt := time.Now()
				switch fault {
				case "stopped":
					s.Stop()
				case "paused":
					admin := redis.NewClient(&redis.Options{Addr: s.Addr})
					if err := admin.Do(context.Background(), "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err(); err != nil {
						t.Fatalf("CLIENT PAUSE: %v", err)
					}
					admin.Close()
				}
				var wg sync.WaitGroup
				for i, p := range policies {
					wg.Add(1)
					go func(l Limiter, p string) {
						defer wg.Done()
						for n := 0; n < 3; n++ {
							start := time.Now()
							d, err := l.Allow(context.Background(), "kim", 1)
							if took := time.Since(start); took > timeout+margin {
								t.Errorf("policy %q decision %d took %v, want at most %v + margin", p, n, took, timeout)
							}
							switch p {
							case OnErrorOpen:
								if err != nil || !d.Allowed || d.By != decision.ByFailOpen {
									t.Errorf("open: %+v, %v; want allowed by fail-open", d, err)
								}
							case OnErrorClosed:
								if err != nil || d.Allowed || d.By != decision.ByFailClosed {
									t.Errorf("closed: %+v, %v; want denied by fail-closed", d, err)
								}
							case OnErrorLocal:
								// a tenth of 20: two admitted, then denied, all by the fallback
								if err != nil || d.Allowed != (n < 2) || d.By != decision.ByFallback {
									t.Errorf("local request %d: %+v, %v; want allowed=%v by fallback", n, d, err, n < 2)
								}
							default:
								if err == nil {
									t.Errorf("no policy: %+v, want the error", d)
								}
							}
						}
					}(ls[i], p)
				}
				wg.Wait()
				if fault == "paused" {
					// Once the pause ends, Redis decides again. The first
					// calls may still find the connections the timed-out
					// calls left behind (queued replies, a redial), which on
					// a loaded machine takes longer than the 100ms timeout:
					// each policy gets a second to come back.
					time.Sleep(time.Until(faultAt.Add(pause + 100*time.Millisecond)))
					for i, p := range policies {
						var d Decision
						var err error
						for until := time.Now().Add(time.Second); ; {
							d, err = ls[i].Allow(context.Background(), "kim", 1)
							if (err == nil && d.By == decision.ByRedis) || time.Now().After(until) {
								break
							}
							time.Sleep(10 * time.Millisecond)
						}
						if err != nil || d.By != decision.ByRedis {
							t.Errorf("policy %q a second after the pause: %+v, %v; want decided by redis", p, d, err)
						}
					}
				}
			})
		}
	}
}

// TestPolicyCallerCancel: a caller that gives up gets its error back; no
// policy turns an interrupted run into decisions.
func TestPolicyCallerCancel(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	limit := rate.Limit{Count: 5, Window: time.Minute}
	inner := mustNew(t, Config{Algorithm: design.RedisFixedWindow, Limit: limit}, s.Client(t), nil)
	l := WithPolicy(inner, Policy{OnError: OnErrorOpen}, limit)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Allow(ctx, "lee", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller got %v, want context.Canceled", err)
	}
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p  Policy
		ok bool
	}{
		{Policy{}, true},
		{Policy{OnError: "open", OnFailover: "deny", Timeout: time.Second}, true},
		{Policy{OnError: "local", Local: rate.Limit{Count: 2, Window: time.Second}}, true},
		{Policy{OnError: "maybe"}, false},
		{Policy{OnFailover: "panic"}, false},
		{Policy{Timeout: -time.Second}, false},
		{Policy{OnError: "local", Local: rate.Limit{Count: 0, Window: time.Second}}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v", tt.p), func(t *testing.T) {
			if err := tt.p.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	l := rate.Limit{Count: 10, Window: time.Second}
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"fixed window", Config{Algorithm: design.RedisFixedWindow, Limit: l}, true},
		{"every clock", Config{Algorithm: design.RedisTokenBucket, Limit: l, Clock: ClockRedis}, true},
		{"unknown algorithm", Config{Algorithm: "redis-magic", Limit: l}, false},
		{"no limit", Config{Algorithm: design.RedisFixedWindow}, false},
		{"sub-ms window", Config{Algorithm: design.RedisFixedWindow, Limit: rate.Limit{Count: 1, Window: 1500 * time.Microsecond}}, false},
		{"bad clock", Config{Algorithm: design.RedisGCRA, Limit: l, Clock: "sundial"}, false},
		{"redis clock on a local design", Config{Algorithm: design.LocalTokenBucket, Limit: l, Clock: ClockRedis}, false},
		{"negative capacity", Config{Algorithm: design.RedisGCRA, Limit: l, Capacity: -1}, false},
		{"refill_below 1", Config{Algorithm: design.Leasing, Limit: l, Lease: LeaseConfig{RefillBelow: 1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if _, nerr := New(tt.cfg, nil, nil); tt.ok && IsLocal(tt.cfg.Algorithm) != (nerr == nil) {
				t.Fatalf("New without a client = %v", nerr)
			}
		})
	}
	if _, err := New(Config{Algorithm: "nope", Limit: l}, nil, nil); !errors.Is(err, ErrUnknownAlgorithm) {
		t.Fatalf("New(unknown) = %v, want ErrUnknownAlgorithm", err)
	}
}

// TestPolicyKeepsLeasedBudget: behind a policy, a lease still spends the
// budget it holds while Redis is down (By=lease); the policy takes over
// only once the slice is empty and Redis must be asked.
func TestPolicyKeepsLeasedBudget(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	limit := rate.Limit{Count: 100, Window: time.Minute}
	inner := mustNew(t, Config{Algorithm: design.Leasing, Limit: limit, Lease: LeaseConfig{Size: 3, Timeout: 100 * time.Millisecond}}, s.Client(t), nil)
	l := WithPolicy(inner, Policy{OnError: OnErrorClosed, Timeout: 100 * time.Millisecond}, limit)
	ctx := context.Background()
	if d, err := inner.Allow(ctx, "ruth", 1); err != nil || !d.Allowed {
		t.Fatalf("first request: %+v, %v", d, err)
	}
	s.Stop()
	want := []decision.By{decision.ByLease, decision.ByLease, decision.ByFailClosed}
	for i, by := range want {
		d, err := l.Allow(ctx, "ruth", 1)
		if err != nil || d.By != by || d.Allowed != (by == decision.ByLease) {
			t.Fatalf("request %d with Redis down: %+v, %v; want decided by %v", i, d, err, by)
		}
	}
}

// TestPolicyAfterClientKill: connections the server killed while the
// decision pool held them warm are replaced before a decision is sent on
// them, so the next decisions are Redis's (or a lease's), never fail-open.
func TestPolicyAfterClientKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Start(t)
	admin := s.Client(t)
	limit := rate.Limit{Count: 1_000_000, Window: time.Minute}
	for _, algo := range design.Names() {
		if IsLocal(algo) {
			continue
		}
		// One after the other: CLIENT KILL TYPE normal hits every client
		// of the server but the admin's own connection.
		t.Run(algo, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 4})
			t.Cleanup(func() { c.Close() })
			inner := mustNew(t, Config{Algorithm: algo, Limit: limit}, c, nil)
			if err := inner.(Warmer).Warm(ctx, 4); err != nil {
				t.Fatalf("Warm: %v", err)
			}
			// A timeout no loaded machine reaches: a decision lost here is
			// one sent on a dead connection, not a slow one.
			l := WithPolicy(inner, Policy{OnError: OnErrorOpen, Timeout: 10 * time.Second}, limit, WithContextHonored(HonorsContext(c)))
			if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal").Err(); err != nil {
				t.Fatalf("CLIENT KILL: %v", err)
			}
			want := decision.ByRedis
			if algo == design.Leasing {
				want = decision.ByLease
			}
			for i := range 8 {
				if d, err := l.Allow(ctx, "kim", 1); err != nil || d.By != want {
					t.Errorf("decision %d after CLIENT KILL: %+v, %v; want decided by %s", i, d, err, want)
				}
			}
		})
	}
}
