package discover

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/traffic"
)

// want is a known answer: the class, and the figures of that class.
type want struct {
	class   string
	limit   int64
	window  time.Duration
	rate    float64
	burst   float64
	aligned string
	denials bool
}

// gatewayCases configures every design of rlctl's gateway and says what
// discover must find. Buckets get a capacity unlike their rate so the two
// cannot be confused.
func gatewayCases() map[string]struct {
	cfg  limiter.Config
	want want
} {
	w := time.Second
	window := func(class, aligned string) want {
		return want{class: class, limit: 12, window: w, aligned: aligned}
	}
	bucket := want{class: TokenBucket, rate: 10, burst: 20, aligned: AlignNone}
	out := map[string]struct {
		cfg  limiter.Config
		want want
	}{
		design.LocalFixedWindow:        {limiter.Config{Limit: lim(12, w)}, window(FixedWindow, AlignEpoch)},
		design.LocalTokenBucket:        {limiter.Config{Limit: lim(10, w), Capacity: 20}, bucket},
		design.RedisGetIncr:            {limiter.Config{Limit: lim(12, w)}, window(FixedWindow, AlignFirstRequest)},
		design.RedisFixedWindow:        {limiter.Config{Limit: lim(12, w)}, window(FixedWindow, AlignFirstRequest)},
		design.RedisFixedWindowRefresh: {limiter.Config{Limit: lim(12, w)}, want{class: FixedWindow, limit: 12, window: w, aligned: AlignFirstRequest, denials: true}},
		design.RedisClockWindow:        {limiter.Config{Limit: lim(12, w)}, window(FixedWindow, AlignEpoch)},
		design.RedisTokenBucket:        {limiter.Config{Limit: lim(10, w), Capacity: 20}, bucket},
		design.RedisSlidingWindow:      {limiter.Config{Limit: lim(12, w)}, window(SlidingWindow, AlignEpoch)},
		design.RedisSlidingLog:         {limiter.Config{Limit: lim(12, w)}, window(SlidingLog, AlignNone)},
		design.RedisGCRA:               {limiter.Config{Limit: lim(10, w), Capacity: 20}, bucket},
		design.Leasing:                 {limiter.Config{Limit: lim(12, w)}, window(FixedWindow, AlignEpoch)},
	}
	return out
}

func check(t *testing.T, res *Result, w want) {
	t.Helper()
	if !res.Found {
		t.Fatalf("nothing found: %s", res.Summary)
	}
	for _, m := range mismatches(res, w) {
		t.Error(m)
	}
}

// mismatches says where res differs from the known answer w.
func mismatches(res *Result, w want) []string {
	p := res.Policy
	if !res.Found {
		return []string{"nothing found: " + res.Summary}
	}
	var out []string
	if p.Algorithm != w.class {
		out = append(out, fmt.Sprintf("algorithm %q, want %q (%s)", p.Algorithm, w.class, p.Evidence["algorithm"].Evidence))
	}
	if w.limit > 0 && !within(float64(p.Limit), float64(w.limit)) {
		out = append(out, fmt.Sprintf("limit %d, want %d±10%%", p.Limit, w.limit))
	}
	if w.window > 0 && !within(float64(p.WindowMS), float64(w.window.Milliseconds())) {
		out = append(out, fmt.Sprintf("window %dms, want %v±10%%", p.WindowMS, w.window))
	}
	if w.rate > 0 && !within(p.RatePerS, w.rate) {
		out = append(out, fmt.Sprintf("rate %.4g/s, want %v/s±10%%", p.RatePerS, w.rate))
	}
	if w.burst > 0 && !within(p.Burst, w.burst) {
		out = append(out, fmt.Sprintf("burst %.4g, want %v±10%%", p.Burst, w.burst))
	}
	if w.aligned != "" && p.Aligned != w.aligned {
		out = append(out, fmt.Sprintf("aligned %q, want %q (%s)", p.Aligned, w.aligned, p.Evidence["aligned"].Evidence))
	}
	if p.DenialsCount == nil || *p.DenialsCount != w.denials {
		out = append(out, fmt.Sprintf("denials_count %v, want %v", p.DenialsCount, w.denials))
	}
	return out
}

// TestDiscoverEveryGatewayDesign runs discover against rlctl's own HTTP
// gateway with every design, on a real redis-server, and checks the
// class exactly and every figure within 10% of the configured one.
func TestDiscoverEveryGatewayDesign(t *testing.T) {
	srv := startRedis(t)
	cases := gatewayCases()
	for _, name := range design.Names() {
		c, ok := cases[name]
		if !ok {
			t.Errorf("design %s has no known answer here", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := c.cfg
			cfg.Algorithm = name
			cfg.Prefix = fmt.Sprintf("rl:%s:", name)
			urls := gatewayOf(t, srv.Addr, cfg, 1)
			// A stall of this binary reads as the limiter's own timing: in
			// a make test on a fresh clone the leasing gateway's two
			// identities, spent 40ms apart in an epoch window, both got
			// their quota back 170ms after their first request (the
			// stall, not a window) and read as a token bucket. A wrong
			// answer while calmtest.Watch saw a stall past 5ms runs
			// again (each run uses identities of its own); a wrong
			// answer on a calm machine stands.
			var res *Result
			calmtest.Retry(t, 3, func(int) string {
				watch := calmtest.Watch()
				res = discoverURLs(t, 300, urls...)
				if stalled, miss := watch(), mismatches(res, c.want); stalled > 5*time.Millisecond && len(miss) > 0 {
					return fmt.Sprintf("%s while the test binary stalled %v (a busy machine)", strings.Join(miss, "; "), stalled)
				}
				return ""
			})
			check(t, res, c.want)
		})
	}
	for name := range cases {
		if !slices.Contains(design.Names(), name) {
			t.Errorf("known answer for %s, which is no design", name)
		}
	}
}

// TestDiscoverFirstBurstThroughAStall: the first burst's third to sixth
// answers come 100ms late, as a loaded machine's stall can make them (a
// late answer is one over 8 times the quickest so far, so 40ms was not
// late once the first two answers took 5ms or more). Four
// late answers in a row are how a queue shows, but the burst goes on
// quick: the run finds the fixed window, not a leaky bucket, and says so.
// When the machine made the first two answers slow themselves, the held
// ones may not have been late by that rule: the run must still find the
// fixed window, and the note is asked for only when the first answers
// took under half of what would make 100ms late (6.25ms), since the
// gateway times them from its handler and discover from its own send and
// receive, later by the round trip and any stall between (a slow host's
// first answers took 11.2ms at the handler and the note did not come).
func TestDiscoverFirstBurstThroughAStall(t *testing.T) {
	t.Parallel()
	const stall = 100 * time.Millisecond
	srv := startRedis(t)
	cfg := limiter.Config{Algorithm: design.RedisFixedWindow, Prefix: "rl:stall:", Limit: lim(20, time.Second)}
	urls := gatewayOf(t, srv.Addr, cfg, 1)
	var mu sync.Mutex
	quickest := time.Duration(math.MaxInt64)
	res := discoverLogged(t, 300, &counting{
		before: func(n int) {
			if n >= 3 && n <= 6 {
				time.Sleep(stall)
			}
		},
		after: func(n int, took time.Duration) {
			if n <= 2 {
				mu.Lock()
				quickest = min(quickest, took)
				mu.Unlock()
			}
		},
	}, urls...)
	if res.Policy.Algorithm != FixedWindow || !within(float64(res.Policy.Limit), 20) {
		t.Errorf("found %s of %d, want fixed-window of 20±10%%", res.Policy.Algorithm, res.Policy.Limit)
	}
	if late := lateFactor * quickest; 2*late >= stall {
		t.Logf("the first answers took %v at the gateway: the held ones (%v more) may not have been late as discover timed them", quickest, stall)
		return
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "taken for a stall") }) {
		t.Errorf("no note says the late answers were taken for a stall (the first answers took %v): %q", quickest, res.Notes)
	}
}

// TestDiscoverWindowThroughALostAnswer loses the answer to the request
// that first gets an identity's quota back (the gateway counted it and
// opened the next window with it; the answer never came, as a request
// timed out on a loaded machine does), after 400 ms. The next request
// admitted is then well inside a window it did not open, so the reset
// after it comes far less than a window later: the window is still
// measured from resets seen on both sides, and is the configured one.
func TestDiscoverWindowThroughALostAnswer(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	cfg := limiter.Config{Algorithm: design.RedisFixedWindow, Prefix: "rl:lost:", Limit: lim(10, time.Second)}
	urls := gatewayOf(t, srv.Addr, cfg, 1)
	var mu sync.Mutex
	denied := map[string]bool{}
	lost := false
	c := &counting{answer: func(r traffic.Request, resp traffic.Response) traffic.Response {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case resp.Outcome == decision.Denied:
			denied[r.ID] = true
		case resp.Outcome == decision.Allowed && denied[r.ID] && !lost:
			lost = true
			time.Sleep(400 * time.Millisecond)
			return traffic.ErrResponse(errors.New("the answer was lost"))
		}
		return resp
	}}
	res := discoverWithin(t, 300, c, urls...)
	if !lost {
		t.Fatal("no identity got its quota back: no answer was lost")
	}
	t.Logf("%s: %+v; window: %s", res.Summary, res.Policy, res.Policy.Evidence["window_ms"].Evidence)
	check(t, res, want{class: FixedWindow, limit: 10, window: time.Second, aligned: AlignFirstRequest})
}

// TestDiscoverFirstBurstAcrossABoundary holds the sixth request of the
// run until just after a whole second, so the first burst of a window
// on the clock gets five in one window and the quota of the next: the
// limit is still the quota of one window, and the run says why. The
// window and its alignment are TestDiscoverEveryGatewayDesign's.
func TestDiscoverFirstBurstAcrossABoundary(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	cfg := limiter.Config{Algorithm: design.RedisClockWindow, Prefix: "rl:straddle:", Limit: lim(12, time.Second)}
	urls := gatewayOf(t, srv.Addr, cfg, 1)
	res := discoverHeld(t, 300, func(n int) {
		if n == 6 {
			now := time.Now()
			time.Sleep(now.Truncate(time.Second).Add(time.Second + 5*time.Millisecond).Sub(now))
		}
	}, urls...)
	if res.Policy.Algorithm != FixedWindow || !within(float64(res.Policy.Limit), 12) {
		t.Errorf("found %s of %d, want fixed-window of 12±10%%", res.Policy.Algorithm, res.Policy.Limit)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "across a window's boundary") }) {
		t.Errorf("no note says the first burst crossed a boundary: %q", res.Notes)
	}
}

// TestDiscoverWindowOrLogThroughAStall holds the first request of every
// identity 100ms, as a loaded machine's stall can: a window opened by a
// first request then opens that much after it was sent, and a log's
// first entries age out that much later. The probe telling the two
// apart times its count from the first half's answers, so it still finds
// each.
func TestDiscoverWindowOrLogThroughAStall(t *testing.T) {
	srv := startRedis(t)
	for name, w := range map[string]want{
		design.RedisFixedWindow: {class: FixedWindow, limit: 12, window: time.Second, aligned: AlignFirstRequest},
		design.RedisSlidingLog:  {class: SlidingLog, limit: 12, window: time.Second, aligned: AlignNone},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := limiter.Config{Algorithm: name, Prefix: "rl:held:" + name + ":", Limit: lim(12, time.Second)}
			urls := gatewayOf(t, srv.Addr, cfg, 1)
			var mu sync.Mutex
			seen := map[string]bool{}
			res := discoverLogged(t, 300, &counting{request: func(r traffic.Request) {
				mu.Lock()
				first := !seen[r.ID]
				seen[r.ID] = true
				mu.Unlock()
				if first {
					time.Sleep(100 * time.Millisecond)
				}
			}}, urls...)
			check(t, res, w)
		})
	}
}
