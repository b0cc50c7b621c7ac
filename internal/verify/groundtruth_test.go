package verify

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redistest"
)

// The tests in this file hold rlctl's figures against gateways it did not
// write, with the truth taken from the gateways' own decision logs, as a
// user would check them: counts must equal the log's exactly (but for
// answers rlctl never got), and the log's own most-allowed-in-a-window must
// lie within [ceiling, ceiling_upper] for every identity. The gateways send no decision time,
// so the bounds are the send/receive ones.

// logEntry is one decision a gateway wrote down, on its own clock.
type logEntry struct {
	id      string
	at      time.Time
	outcome string // allowed, denied or error
	retry   bool   // a denial sent Retry-After
}

// decisionLog is the gateways' shared log.
type decisionLog struct {
	mu      sync.Mutex
	entries []logEntry
}

func (l *decisionLog) add(e logEntry) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

// truth is what the log says, per identity.
type truth struct {
	logged, allowed, denied, errors, denialsWithoutRetry int
	ceiling                                              map[string]int // most allowed in any [t, t+W)
	allowedBy                                            map[string]int
}

// truth reads the log from since on: the requests rlctl sends before its
// clock starts (one probe per gateway, see traffic.Prober) are not the
// run's.
func (l *decisionLog) truth(w time.Duration, since time.Time) truth {
	l.mu.Lock()
	defer l.mu.Unlock()
	tr := truth{ceiling: map[string]int{}, allowedBy: map[string]int{}}
	times := map[string][]time.Time{}
	for _, e := range l.entries {
		if e.at.Before(since) {
			continue
		}
		tr.logged++
		switch e.outcome {
		case "allowed":
			tr.allowed++
			tr.allowedBy[e.id]++
			times[e.id] = append(times[e.id], e.at)
		case "denied":
			tr.denied++
			if !e.retry {
				tr.denialsWithoutRetry++
			}
		default:
			tr.errors++
		}
	}
	// Brute force: a busiest window can start at an allowed decision.
	for id, ts := range times {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		best := 0
		for i := range ts {
			n := sort.Search(len(ts), func(k int) bool { return !ts[k].Before(ts[i].Add(w)) }) - i
			best = max(best, n)
		}
		tr.ceiling[id] = best
	}
	return tr
}

// foreignGateway serves one gateway: identity from the "user" query
// parameter, the decision from decide, its log written when decided.
func foreignGateway(t *testing.T, log *decisionLog, decide func(id string, w http.ResponseWriter) string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("user")
		outcome := decide(id, w)
		log.add(logEntry{id: id, at: time.Now(), outcome: outcome, retry: w.Header().Get("Retry-After") != ""})
		switch outcome {
		case "allowed":
			w.WriteHeader(http.StatusOK)
		case "denied":
			w.WriteHeader(deniedStatus(w))
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// deniedStatus lets a decide function pick its own denial status through a
// private header, removed before the answer goes out.
func deniedStatus(w http.ResponseWriter) int {
	s, err := strconv.Atoi(w.Header().Get("X-Test-Status"))
	w.Header().Del("X-Test-Status")
	if err != nil {
		return http.StatusTooManyRequests
	}
	return s
}

// checkAgainstLog compares a run with the gateways' log.
func checkAgainstLog(t *testing.T, out *Outcome, log *decisionLog, w time.Duration) {
	t.Helper()
	tr := log.truth(w, out.History.Meta.Start)
	if tr.allowed == 0 || tr.denied == 0 {
		t.Fatalf("the log has %d allowed and %d denied: the run did not reach the limit", tr.allowed, tr.denied)
	}
	sent := measured(t, out, metric.Requests) - measured(t, out, metric.Dropped)
	if int(sent) != tr.logged {
		t.Errorf("rlctl sent %g requests; the gateways logged %d", sent, tr.logged)
	}
	// Counts are exact, but for requests whose answer rlctl never got (a
	// timeout, or still in flight when the run's grace ran out on a loaded
	// machine): those are its errors beyond the log's, each allowed or
	// denied in the log.
	allowed, denied := int(measured(t, out, metric.Allowed)), int(measured(t, out, metric.Denied))
	extra := int(measured(t, out, metric.Errors)) - tr.errors
	if extra < 0 || tr.allowed < allowed || tr.denied < denied || (tr.allowed-allowed)+(tr.denied-denied) != extra {
		t.Errorf("rlctl %d allowed, %d denied, %d errors; the gateways' log %d, %d, %d", allowed, denied, extra+tr.errors, tr.allowed, tr.denied, tr.errors)
	}
	if got, want := measured(t, out, metric.RetryAfterMissing), float64(tr.denialsWithoutRetry)/float64(tr.denied); math.Abs(got-want) > 1e-9 {
		t.Errorf("retry_after_missing: rlctl %g, the log %g", got, want)
	}
	worst := 0
	seen := map[string]bool{}
	for _, ir := range out.Report.Result.PerIdentity {
		seen[ir.Identity] = true
		want, ok := tr.ceiling[ir.Identity]
		if !ok && ir.Metrics[metric.Allowed] > 0 {
			t.Errorf("identity %q: rlctl saw %g allowed; the log has none", ir.Identity, ir.Metrics[metric.Allowed])
			continue
		}
		worst = max(worst, want)
		if got, logged := int(ir.Metrics[metric.Allowed]), tr.allowedBy[ir.Identity]; got > logged || logged-got > extra {
			t.Errorf("identity %q: allowed %d, the log %d (%d answers lost)", ir.Identity, got, logged, extra)
		}
		lo, hi := ir.Metrics[metric.Ceiling], ir.Metrics[metric.CeilingUpper]
		if float64(want) < lo || float64(want) > hi {
			t.Errorf("identity %q: the log's ceiling %d lies outside rlctl's [%g, %g]", ir.Identity, want, lo, hi)
		}
	}
	for id := range tr.allowedBy {
		if !seen[id] {
			t.Errorf("identity %q: the log allowed %d; rlctl reports no such identity", id, tr.allowedBy[id])
		}
	}
	lo, hi := measured(t, out, metric.Ceiling), measured(t, out, metric.CeilingUpper)
	if float64(worst) < lo || float64(worst) > hi {
		t.Errorf("scenario ceiling: the log's %d lies outside rlctl's [%g, %g]", worst, lo, hi)
	}
	t.Logf("log: %d allowed, %d denied, %d errors, worst ceiling %d; rlctl ceiling [%g, %g]", tr.allowed, tr.denied, tr.errors, worst, lo, hi)
}

// Three gateways share go-redis/redis_rate's GCRA in a real redis-server,
// answer 429 with Retry-After and X-RateLimit-Remaining, and fail every
// 50th request with a 500.
func TestForeignGCRAGatewaysAgainstTheirLog(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rl := redis_rate.NewLimiter(srv.Client(t))
	policy := redis_rate.Limit{Rate: 20, Burst: 20, Period: time.Second}
	log := &decisionLog{}
	var mu sync.Mutex
	n := 0
	decide := func(id string, w http.ResponseWriter) string {
		mu.Lock()
		n++
		fail := n%50 == 0
		mu.Unlock()
		if fail {
			return "error"
		}
		res, err := rl.Allow(t.Context(), "gcra:"+id, policy)
		if err != nil {
			return "error"
		}
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
		if res.Allowed == 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(res.RetryAfter.Seconds()))))
			return "denied"
		}
		return "allowed"
	}
	urls := []string{foreignGateway(t, log, decide), foreignGateway(t, log, decide), foreignGateway(t, log, decide)}
	out := run(t, parse(t, fmt.Sprintf(`name: foreign-gcra
limit: 20/1s
target:
  kind: http
  timeout: 2s                  # a loaded machine: slowness is not what is tested
  urls: [%s]
  identity: {query: user}
max_error_rate: 0.05           # the gateways fail every 50th request on purpose
traffic:
  rate: 300/s
  duration: 2s
  identities: 4
  spread: random
`, strings.Join(urls, ", "))))
	checkAgainstLog(t, out, log, time.Second)
	// Its 500s could follow an admission as far as rlctl can tell (here
	// they come before GCRA): the upper bound counts them, and the report
	// says so.
	if !slices.ContainsFunc(out.Report.Notes, func(n string) bool { return strings.Contains(n, "may have admitted and counted") }) {
		t.Errorf("errors, yet no note on how they count: %q", out.Report.Notes)
	}
}

// Three gateways each keep their own fixed-window counters in memory (the
// 3× leak), aligned to the wall clock's 500 ms, and answer a denial with
// 503 and no Retry-After: counts and bounds must still match the log, the
// ceiling near 3L, and every denial shows as missing Retry-After.
func TestForeignLocalCounterGatewaysAgainstTheirLog(t *testing.T) {
	t.Parallel()
	log := &decisionLog{}
	const limit, window = 10, 500 * time.Millisecond
	gateway := func() string {
		var mu sync.Mutex
		counts := map[string]int{}
		var current int64
		return foreignGateway(t, log, func(id string, w http.ResponseWriter) string {
			mu.Lock()
			defer mu.Unlock()
			if win := time.Now().UnixNano() / int64(window); win != current {
				current, counts = win, map[string]int{}
			}
			if counts[id] >= limit {
				w.Header().Set("X-Test-Status", "503")
				return "denied"
			}
			counts[id]++
			w.Header().Set("X-Rate-Limit-Remaining", strconv.Itoa(limit-counts[id]))
			return "allowed"
		})
	}
	out := run(t, parse(t, fmt.Sprintf(`name: foreign-local
limit: 10/500ms
target:
  kind: http
  timeout: 2s                  # a loaded machine: slowness is not what is tested
  urls: [%s, %s, %s]
  identity: {query: user}
  denied_status: [503]
traffic:
  rate: 400/s
  duration: 2s
  identities: 3
  spread: round-robin
`, gateway(), gateway(), gateway())))
	checkAgainstLog(t, out, log, window)
	if m := measured(t, out, metric.RetryAfterMissing); m != 1 {
		t.Errorf("retry_after_missing %g; no denial carried Retry-After", m)
	}
	if lo := measured(t, out, metric.Ceiling); lo < 2*limit {
		t.Errorf("three local counters, yet ceiling %g < 2L", lo)
	}
}

// Two gateways share a sliding-log limiter keyed on the client's address,
// as nginx's limit_req and many middlewares key by default; rlctl gives
// each identity its own loopback address, and the log names identities by
// address, as such a gateway's access log would.
func TestForeignAddressKeyedGatewaysAgainstTheirLog(t *testing.T) {
	t.Parallel()
	log := &decisionLog{}
	const limit, window = 8, 400 * time.Millisecond
	var mu sync.Mutex
	recent := map[string][]time.Time{}
	var urls []string
	for range 2 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ip, _, _ := net.SplitHostPort(r.RemoteAddr)
			mu.Lock()
			now := time.Now()
			kept := recent[ip][:0]
			for _, at := range recent[ip] {
				if now.Sub(at) < window {
					kept = append(kept, at)
				}
			}
			allowed := len(kept) < limit
			if allowed {
				kept = append(kept, now)
			}
			recent[ip] = kept
			// Logged under the lock: the log's order is the limiter's.
			outcome := map[bool]string{true: "allowed", false: "denied"}[allowed]
			log.add(logEntry{id: ip, at: now, outcome: outcome, retry: !allowed})
			mu.Unlock()
			if !allowed {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
			}
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	out := run(t, parse(t, fmt.Sprintf(`name: foreign-by-address
limit: 8/400ms
target:
  kind: http
  timeout: 2s                  # a loaded machine: slowness is not what is tested
  urls: [%s, %s]
  identity: {source: 127.0.3.0/29}
traffic:
  rate: 200/s
  duration: 1500ms
  identities: 5
thresholds:
  - ceiling <= limit
`, urls[0], urls[1])))
	checkAgainstLog(t, out, log, window)
	if ids := out.History.Meta.Identities; len(ids) != 5 || ids[0] != "127.0.3.1" || ids[4] != "127.0.3.5" {
		t.Errorf("identities %v; want the addresses 127.0.3.1 to 127.0.3.5", ids)
	}
	if out.Report.Status != "pass" {
		t.Errorf("a shared sliding log per address: status %s, ceiling %g", out.Report.Status, measured(t, out, metric.Ceiling))
	}
}
