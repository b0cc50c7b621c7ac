package discover

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/httpgw"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/traffic"
)

// fixedWindow is a small in-memory fixed window (first-request aligned)
// whose denials say Retry-After: retryAfter, true or not, and whose every
// answer says X-RateLimit-Remaining: 5, which is not.
func fixedWindow(limit int, w time.Duration, retryAfter string) http.Handler {
	var mu sync.Mutex
	type win struct {
		start time.Time
		n     int
	}
	wins := map[string]*win{}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get("X-API-Key")
		now := time.Now()
		rw.Header().Set("X-RateLimit-Remaining", "5")
		c := wins[id]
		if c == nil || now.Sub(c.start) >= w {
			c = &win{start: now}
			wins[id] = c
		}
		if c.n >= limit {
			rw.Header().Set("Retry-After", retryAfter)
			rw.WriteHeader(http.StatusTooManyRequests)
			return
		}
		c.n++
	})
}

// TestDiscoverRetryAfterHonesty: a Retry-After of 0 on a 1s window sends
// a client back too early (early); one of 30s keeps it away while it
// would be admitted (late); rlctl's gateway tells the truth (exact, in
// the gateway tests).
func TestDiscoverRetryAfterHonesty(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{"0", RetryEarly},
		{"30", RetryLate},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			url := handlerServer(t, fixedWindow(8, time.Second, tc.header))
			res := discoverURLs(t, 300, url)
			if res.Policy.RetryAfter != tc.want {
				t.Errorf("retry_after %q, want %q: %s", res.Policy.RetryAfter, tc.want, res.Policy.Evidence["retry_after"].Evidence)
			}
			check(t, res, want{class: FixedWindow, limit: 8, window: time.Second, aligned: AlignFirstRequest})
			if r := res.Policy.RemainingExact; r == nil || *r {
				t.Errorf("remaining_exact %v, want false: %s", r, res.Policy.Evidence["remaining_exact"].Evidence)
			}
		})
	}
}

// TestDiscoverHeaderForms: rlctl's gateway speaks draft 11 by default and
// draft 06 when told; discover names the form it heard.
func TestDiscoverHeaderForms(t *testing.T) {
	srv := startRedis(t)
	for _, fields := range []string{httpgw.FieldsDraft11, httpgw.FieldsDraft06} {
		t.Run(fields, func(t *testing.T) {
			t.Parallel()
			urls := gatewayFields(t, srv.Addr, limiter.Config{Algorithm: design.RedisFixedWindow, Limit: lim(10, time.Second), Prefix: "rl:forms-" + fields + ":"}, fields)
			res := discoverURLs(t, 300, urls...)
			forms := res.Policy.HeaderForms
			if len(forms) != 2 || forms[0] != "retry-after" || forms[1] != fields {
				t.Errorf("header forms %v, want [retry-after %s]", forms, fields)
			}
		})
	}
}

// TestDiscoverConcurrency: a server that holds each request 40ms and
// refuses a fourth in flight admits every request sent back to back but
// not many at once, and again right after: a concurrency limit of 3.
//
// The second case holds back the last ten of the first twenty sent at
// once, until the first ten are answered, as a loaded machine may: that
// burst gets 6 through in two waves of 3; and the last of the second
// burst, which gets 4 through. Requests that did not overlap only add
// admissions, so the limit is how many admitted were in flight at once.
func TestDiscoverConcurrency(t *testing.T) {
	t.Parallel()
	for _, waves := range []bool{false, true} {
		t.Run(map[bool]string{false: "at once", true: "first burst in two waves"}[waves], func(t *testing.T) {
			t.Parallel()
			slots := make(chan struct{}, 3)
			url := handlerServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case slots <- struct{}{}:
					time.Sleep(40 * time.Millisecond)
					<-slots
				default:
					w.WriteHeader(http.StatusTooManyRequests)
				}
			}))
			// A request let in as a slot frees abuts the one before it, so
			// an answer read a few milliseconds late shows them in flight
			// together: one more read while the test binary stalled is
			// tried again (discoverCalm).
			res := discoverCalm(t, 40, func() *counting {
				c := &counting{}
				if waves {
					c.request = holdBack()
				}
				return c
			}, url, func(res *Result) string {
				if res.Policy.Limit > 3 {
					return fmt.Sprintf("limit %d", res.Policy.Limit)
				}
				return ""
			})
			if !res.Found || res.Policy.Algorithm != Concurrency {
				t.Fatalf("algorithm %q, want concurrency: %s", res.Policy.Algorithm, res.Policy.Evidence["algorithm"].Evidence)
			}
			if res.Policy.Limit != 3 {
				t.Errorf("limit %d, want 3 in flight (%s)", res.Policy.Limit, res.Policy.Evidence["limit"].Evidence)
			}
		})
	}
}

// holdBack is a request hook that holds back, for 100ms each, the last
// ten requests of the first burst of the second identity (the one sent
// many at once: twice 20) and the last one of its second.
func holdBack() func(traffic.Request) {
	var mu sync.Mutex
	var ids []string
	sent := map[string]int{}
	return func(r traffic.Request) {
		mu.Lock()
		if sent[r.ID] == 0 {
			ids = append(ids, r.ID)
		}
		sent[r.ID]++
		n := sent[r.ID]
		hold := len(ids) >= 2 && r.ID == ids[1] && (n > 10 && n <= 20 || n == 40)
		mu.Unlock()
		if hold {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestDiscoverQueuePastASlowFirstAnswer: a server that queues each
// identity's requests, one every 100ms, up to 5 waiting (a leaky bucket as
// a queue), whose first answer came slow (held 80ms on the way, as a
// connection dialed on a busy machine): the queued answers are not late
// against that one, but a fresh identity's quick answer shows they are,
// and the queue is found, with its rate and depth. (At one every 50ms, a
// burst whose 40 requests a loaded machine spread over more than 50ms
// found a slot drained and 7 admitted; at 100ms, so did one whose sends
// the server, starved, read over more than 100ms.)
func TestDiscoverQueuePastASlowFirstAnswer(t *testing.T) {
	t.Parallel()
	const period, depth = 100 * time.Millisecond, 5
	var mu sync.Mutex
	next := map[string]time.Time{}
	url := handlerServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-API-Key")
		now := time.Now()
		mu.Lock()
		at := next[id]
		if at.Before(now) {
			at = now
		}
		if at.Sub(now) > depth*period {
			mu.Unlock()
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		next[id] = at.Add(period)
		mu.Unlock()
		time.Sleep(at.Sub(now))
	}))
	// The server in this binary reads a request when it gets the cores,
	// not when discover stamped it sent: one more admitted, or a batch
	// "right after" one that found the queue drained (read as a limit on
	// requests in flight), while the test binary stalled is tried again
	// (discoverCalm).
	res := discoverCalm(t, 120, func() *counting {
		return &counting{before: func(n int) {
			if n == 1 {
				time.Sleep(80 * time.Millisecond)
			}
		}}
	}, url, func(res *Result) string {
		if p := res.Policy; p.Algorithm != LeakyBucket || p.Burst > depth+1 {
			return fmt.Sprintf("%s, burst %.4g", p.Algorithm, p.Burst)
		}
		return ""
	})
	p := res.Policy
	if !res.Found || p.Algorithm != LeakyBucket {
		t.Fatalf("algorithm %q, want %q: %s", p.Algorithm, LeakyBucket, p.Evidence["algorithm"].Evidence)
	}
	if !within(p.RatePerS, 10) {
		t.Errorf("rate %.4g/s, want 10/s±10%%", p.RatePerS)
	}
	if !within(p.Burst, depth+1) {
		t.Errorf("burst %.4g, want %d±10%%: %s", p.Burst, depth+1, p.Evidence["burst"].Evidence)
	}
}
