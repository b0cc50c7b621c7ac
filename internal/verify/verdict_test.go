package verify

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/score"
)

// The tests in this file are the edges where a run once read as PASS on
// nothing: misbehaving gateways on loopback, each held to the verdict the
// judge (package score) must give.

// windowGateway is a fixed window of limit per period for each X-API-Key,
// a correct limiter, answering admissions with 200 and denials with
// denied; stamp, when set, gives the X-RateLimit-Decided-At it sends.
// An aligned window starts on a multiple of period since the Unix epoch
// (else at an identity's first request), and slow, when set, is how long
// each answer waits after its decision.
type windowGateway struct {
	limit   int
	period  time.Duration
	denied  int
	stamp   func(now time.Time) string
	aligned bool
	slow    time.Duration

	mu     sync.Mutex
	counts map[string]int
	opened map[string]time.Time
	// admittedAt is every admission's instant, for the truth.
	admittedAt map[string][]time.Time
}

func (g *windowGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, now := r.Header.Get("X-API-Key"), time.Now()
	g.mu.Lock()
	if g.counts == nil {
		g.counts, g.opened, g.admittedAt = map[string]int{}, map[string]time.Time{}, map[string][]time.Time{}
	}
	if now.Sub(g.opened[id]) >= g.period {
		g.opened[id], g.counts[id] = now, 0
		if g.aligned {
			g.opened[id] = now.Truncate(g.period)
		}
	}
	ok := g.counts[id] < g.limit
	if ok {
		g.counts[id]++
		g.admittedAt[id] = append(g.admittedAt[id], now)
	}
	g.mu.Unlock()
	time.Sleep(g.slow)
	if g.stamp != nil {
		w.Header().Set(decision.DecidedAtHeader, g.stamp(now))
	}
	if !ok {
		w.WriteHeader(g.denied)
	}
}

// mostInWindow is the most any identity had admitted within any span of
// length w: the truth a ceiling must not exceed.
func (g *windowGateway) mostInWindow(w time.Duration) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	most := 0
	for _, ts := range g.admittedAt {
		j := 0
		for i := range ts {
			for ts[i].Sub(ts[j]) >= w {
				j++
			}
			most = max(most, i-j+1)
		}
	}
	return most
}

func gatewayDoc(url, extra string) string {
	return fmt.Sprintf(`name: edge
limit: 10/1s
target: {kind: http, urls: [%q], timeout: 1s%s}
traffic: {rate: 100/s, duration: 1200ms, identities: 2}
`, url, extra)
}

// A gateway that denies everything admitted nothing: that shows no limit
// holding at L, so it is not measured, whatever ceiling <= limit says.
func TestGatewayThatDeniesEverythingIsNotMeasured(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }))
	defer srv.Close()
	out, err := Run(context.Background(), parse(t, gatewayDoc(srv.URL+"/", "")+"thresholds: [ceiling <= limit]\n"), Options{})
	r := out.Report
	if r.Status != score.StatusError || r.Verdict != score.NotMeasured || exitcode.Of(err) != exitcode.Failed || !strings.Contains(r.Error, "nothing was admitted") {
		t.Fatalf("status %s (%s), exit %d, error %q", r.Status, r.Verdict, exitcode.Of(err), r.Error)
	}
}

// A gateway that redirects to a dead port: its 302s are neither
// admissions nor denials, so the run is not measured and says what the
// statuses were.
func TestRedirectsAreNotAdmissions(t *testing.T) {
	t.Parallel()
	dead := listen(t)
	deadURL := "http://" + dead.Addr().String() + "/"
	dead.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, deadURL, http.StatusFound)
	}))
	defer srv.Close()
	out, err := Run(context.Background(), parse(t, gatewayDoc(srv.URL+"/", "")), Options{})
	r := out.Report
	if r.Status != score.StatusError || exitcode.Of(err) != exitcode.Failed || !strings.Contains(r.Error, "302 Found") || r.Metrics[metric.Allowed] != 0 {
		t.Fatalf("status %s, exit %d, allowed %g, error %q", r.Status, exitcode.Of(err), r.Metrics[metric.Allowed], r.Error)
	}
	if got := out.History.Meta.Statuses[302]; got == 0 {
		t.Errorf("statuses %v: no 302 counted", out.History.Meta.Statuses)
	}
}

// A fixed window whose answers come 120ms after its decisions, slower
// than the boundary shots' ±50ms span: the shot straddles (the window is
// seen to roll, 2L admitted), but no admission can be placed inside the
// span, so boundary_allowed <= limit holds on a figure of almost nothing
// while its upper bound shows the burst. That once read as "design
// holds"; it is not measured (score's settled check), never a pass.
func TestBoundaryAnsweredSlowerThanItsSpanIsNotMeasured(t *testing.T) {
	t.Parallel()
	g := &windowGateway{limit: 10, period: time.Second, denied: 429, aligned: true, slow: 120 * time.Millisecond}
	srv := httptest.NewServer(g)
	defer srv.Close()
	doc := fmt.Sprintf(`name: slow-boundary
limit: 10/1s
target: {kind: http, urls: [%q], timeout: 2s}
traffic: {pattern: boundary, align: epoch, duration: 4s, identities: 2}
thresholds: [boundary_allowed <= limit]
`, srv.URL+"/")
	out, err := Run(context.Background(), parse(t, doc), Options{})
	r := out.Report
	var failed score.CheckResult
	for _, c := range r.Validity {
		if !c.Held {
			failed = c
			break
		}
	}
	if r.Status != score.StatusError || r.Verdict != score.NotMeasured || exitcode.Of(err) != exitcode.Failed || failed.Name != "settled" || failed.Busy {
		logShots(t, out)
		t.Fatalf("status %s (%s), exit %d, failed check %+v", r.Status, r.Verdict, exitcode.Of(err), failed)
	}
	if !strings.Contains(failed.Reason, "boundary_allowed <= limit holds on boundary_allowed") || !strings.Contains(failed.Reason, "slower than the boundary shots' ±") {
		t.Errorf("reason %q", failed.Reason)
	}
	if lo, up := r.Metrics[metric.BoundaryAllowed], r.Metrics[metric.BoundaryAllowedUpper]; 2*lo >= up || up <= 10 {
		t.Errorf("boundary_allowed %g, upper %g: want the burst in the upper bound alone", lo, up)
	}
}

// nginx's limit_req denies with 503 by default: a run of mostly 503 says
// to set denied_status, and with it set measures the limiter.
func TestMostly503SuggestsDeniedStatus(t *testing.T) {
	t.Parallel()
	g := &windowGateway{limit: 10, period: time.Second, denied: 503}
	srv := httptest.NewServer(g)
	defer srv.Close()
	out, _ := Run(context.Background(), parse(t, gatewayDoc(srv.URL+"/", "")), Options{})
	if r := out.Report; r.Status != score.StatusError || !strings.Contains(r.Error, "set denied_status: [503]") {
		t.Fatalf("status %s, error %q", r.Status, r.Error)
	}
	out = run(t, parse(t, gatewayDoc(srv.URL+"/", ", denied_status: [503]")+"thresholds: [ceiling <= 2*limit]\n"))
	if r := out.Report; r.Status != score.StatusPass || r.Metrics[metric.Denied] == 0 {
		t.Fatalf("with denied_status: status %s (%s), denied %g", r.Status, r.Error, r.Metrics[metric.Denied])
	}
}

// A gateway whose X-RateLimit-Decided-At is garbage once gave ceilings of
// 22 and 40 for a 10-per-second window. Its times fit no request's send
// and receive, so they are ignored, said so, and the ceiling's bounds
// come from send and receive: they contain what the gateway admitted.
func TestGarbageDecisionTimesAreIgnored(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	n := 0
	g := &windowGateway{limit: 10, period: time.Second, denied: 429, stamp: func(now time.Time) string {
		mu.Lock()
		defer mu.Unlock()
		n++
		// A clock that jumps about by up to a minute.
		off := time.Duration((n*7919)%120-60) * time.Second
		return strconv.FormatFloat(float64(now.Add(off).UnixNano())/1e9, 'f', 6, 64)
	}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	out := run(t, parse(t, gatewayDoc(srv.URL+"/", "")+"thresholds: [ceiling <= 2*limit]\n"))
	r := out.Report
	truth := float64(g.mostInWindow(time.Second))
	if lo, hi := r.Metrics[metric.Ceiling], r.Metrics[metric.CeilingUpper]; truth < lo || truth > hi || lo > 2*10 {
		t.Fatalf("ceiling [%g, %g] against the gateway's own %g", lo, hi, truth)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "were ignored, and the ceiling's bounds for those requests come from send and receive") {
		t.Errorf("no note says the decision times were ignored: %q", r.Notes)
	}
}

// An empty suite, or one whose scenarios were all skipped, ran nothing:
// never a pass.
func TestEmptySuiteIsNoPass(t *testing.T) {
	t.Parallel()
	rep, code := RunSuite(context.Background(), nil, SuiteOptions{})
	if rep.Status == score.StatusPass || code != exitcode.Usage || rep.Reason == "" {
		t.Fatalf("status %s, exit %d, reason %q", rep.Status, code, rep.Reason)
	}
}

// A gateway slower than the engine's default grace, within the request
// timeout: the last requests of the schedule are still answered, not cut
// off as errors of the run's own making.
func TestSlowGatewayWithinItsTimeoutIsAnswered(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "rlctl-probe" {
			time.Sleep(1500 * time.Millisecond)
		}
	}))
	defer srv.Close()
	// Its claim is that every answer came (errors == 0): the gateway
	// limits nothing, so a cap on what it admitted would hold on the
	// traffic alone (score's pressed check).
	out := run(t, parse(t, fmt.Sprintf(`name: slow
limit: 100/1s
target: {kind: http, urls: [%q]}
traffic: {rate: 20/s, duration: 500ms}
thresholds: [errors == 0]
`, srv.URL+"/")))
	if r := out.Report; r.Metrics[metric.Errors] != 0 || r.Metrics[metric.Allowed] != r.Metrics[metric.Requests] {
		t.Fatalf("%g of %g answered, %g errors", r.Metrics[metric.Allowed], r.Metrics[metric.Requests], r.Metrics[metric.Errors])
	}
}

// A Redis that reaches maxmemory under noeviction mid-run refuses every
// write with OOM; the gateways fail open, and the run is not measured
// with the cause named, not as any outage.
func TestRedisOutOfMemoryMidRunIsNamed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	go func() {
		time.Sleep(600 * time.Millisecond)
		ctx := context.Background()
		admin.Set(ctx, "ballast", strings.Repeat("x", 2<<20), 0)
		admin.ConfigSet(ctx, "maxmemory-policy", "noeviction")
		admin.ConfigSet(ctx, "maxmemory", "1mb")
	}()
	out, err := Run(context.Background(), parse(t, `name: oom
limit: 20/1s
target: {algorithm: redis-fixed-window, gateways: 2, timeout: 1s, endpoints: [{name: api, share: 1, on_error: open}]}
traffic: {rate: 100/s, duration: 2s}
thresholds: [ceiling <= 2*limit]
`), Options{Redis: srv.URL()})
	if exitcode.Of(err) != exitcode.Unreachable || !strings.Contains(out.Report.Error, "Redis did not decide: out of memory (maxmemory reached under noeviction") {
		t.Fatalf("exit %d, error %q", exitcode.Of(err), out.Report.Error)
	}
}

// Fifty gateways with local counters (a limit of 100/s each, 5,000/s in
// all) offered 20/s: the limiter denied nothing, so ceiling <= 60*limit
// held on the traffic alone and is not measured (score's pressed check);
// so at 300/s, 6/s a gateway, though the ceiling shows the leak. Two
// gateways offered 300/s are pressed (150/s each), deny, and pass.
func TestCapNeverPressedIsNotMeasured(t *testing.T) {
	t.Parallel()
	doc := func(gateways int, rate string) string {
		return `name: local-counters
limit: 100/1s
target: {kind: simulated, algorithm: local-fixed-window, gateways: ` + strconv.Itoa(gateways) + `}
traffic: {rate: ` + rate + `, duration: 1500ms}
thresholds: [ceiling <= 60*limit]
`
	}
	for _, rate := range []string{"20/s", "300/s"} {
		out, err := Run(t.Context(), parse(t, doc(50, rate)), Options{})
		if exitcode.Of(err) != exitcode.Failed || out.Report.Status != score.StatusError || held(out, "pressed") ||
			!strings.Contains(out.Report.Error, "held on the traffic alone") || out.Report.Metrics[metric.Denied] != 0 {
			t.Errorf("50 gateways at %s: exit %d, %s, pressed held %v, denied %g; error %q", rate, exitcode.Of(err), out.Report.Status, held(out, "pressed"), out.Report.Metrics[metric.Denied], out.Report.Error)
		}
	}
	out := run(t, parse(t, doc(2, "300/s")))
	if !held(out, "pressed") || out.Report.Status != score.StatusPass || out.Report.Metrics[metric.Denied] == 0 {
		t.Errorf("2 gateways at 300/s: %s, pressed held %v, denied %g; notes %q", out.Report.Status, held(out, "pressed"), out.Report.Metrics[metric.Denied], out.Report.Notes)
	}
}
