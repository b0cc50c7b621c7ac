package verify

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/httpgw"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
)

func parse(t *testing.T, doc string) *scenario.Scenario {
	t.Helper()
	scs, err := scenario.Parse([]byte(doc), t.Name()+".yaml")
	if err != nil {
		t.Fatalf("scenario: %v\n%s", err, doc)
	}
	return scs[0]
}

// run runs sc and fails the test unless it was measured: runCalm with
// no bound on the stalls the run saw.
func run(t *testing.T, sc *scenario.Scenario) *Outcome {
	t.Helper()
	out, _ := runCalm(t, sc, 0)
	return out
}

// runCalm runs sc and fails the test unless it was measured. A run that a
// starved test machine left unmeasured (a check failed busy: rlctl's own
// slowness, such as kept-time), or whose answers came too late for a
// figure (a check failed late, such as straddled), is run again, and so,
// when stall is above zero, is one in which the test binary stalled more
// than stall (rlctl sent a request that late, or a watch's timer fired
// that late, calmtest.Watch): a machine that froze the binary
// that long froze its clients' timers too, so timing figures judged
// against a timeout measure the machine, not the design. Three runs in all
// (calmtest.Retry: the later ones alone, on a calm machine); the third is
// judged whatever its stalls. It returns the last run and, when stall is
// above zero, where the binary stalled in it (Worst: the longest stall, or
// rlctl's worst send lag), for bounds that must allow for them.
func runCalm(t *testing.T, sc *scenario.Scenario, stall time.Duration) (*Outcome, calmtest.Stalls) {
	t.Helper()
	var out *Outcome
	var err error
	var stalls calmtest.Stalls
	calmtest.Retry(t, 3, func(int) string {
		if out != nil && out.History != nil {
			out.History.Close()
		}
		watch := func() calmtest.Stalls { return calmtest.Stalls{} }
		if stall > 0 {
			watch = calmtest.WatchStalls()
		}
		out, err = Run(context.Background(), sc, Options{})
		stalls = watch()
		if err != nil {
			if !out.Report.Again() && answeredInTime(out) {
				return ""
			}
			return fmt.Sprintf("verify %s: %v", sc.Name, err)
		}
		stalls.Worst = max(stalls.Worst, traffictest.WorstSendLag(out.History))
		if stall > 0 && stalls.Worst > stall {
			return fmt.Sprintf("verify %s: the test binary stalled %v (a busy machine)", sc.Name, stalls.Worst)
		}
		return ""
	})
	if err != nil {
		t.Fatalf("verify %s: %v", sc.Name, err)
	}
	return out, stalls
}

func measured(t *testing.T, out *Outcome, name string) float64 {
	t.Helper()
	v, ok := out.Report.Metrics[name]
	if !ok {
		// The notes say why a figure is absent (a reading that failed).
		t.Fatalf("%s: metric %s not measured; have %v; notes %q", out.Report.Name, name, out.Report.Metrics, out.Saved.Notes)
	}
	return v
}

// The HTTP target against rlctl's own reference gateway, served for real on
// loopback, with its counters in a real redis-server: two gateways share
// one Lua fixed window, so nothing slips past the window's own envelope
// (at most 2L in any span of W, L per window), and every denial carries
// Retry-After.
func TestHTTPTargetMeasuresRealGateway(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	l := rate.Limit{Count: 10, Window: time.Second}
	set, err := gateway.New(context.Background(), gateway.Options{
		N: 2,
		// Redis TIME decides, so the gateway can say when.
		Limiter: limiter.Config{Algorithm: design.RedisClockWindow, Limit: l, Prefix: "rl:", Clock: limiter.ClockRedis},
		Endpoints: []gateway.Endpoint{{Name: "default", Share: 1,
			Policy: limiter.Policy{OnError: "closed", Timeout: time.Second}}},
		NewClient: func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	o := httpgw.Options{Decider: set, Limit: l}
	m := httpgw.NewMetrics(o)
	g0 := httptest.NewServer(httpgw.Handler(o, m, 0))
	defer g0.Close()
	g1 := httptest.NewServer(httpgw.Handler(o, m, 1))
	defer g1.Close()

	out := run(t, parse(t, fmt.Sprintf(`name: http-gateway
limit: 10/1s
target:
  kind: http
  urls: [%s/, %s/]
  identity: {header: X-API-Key}
  timeout: 2s   # a cold first request in a race build on a busy machine
traffic:
  rate: 100/s
  duration: 2500ms
  identities: 2
thresholds:
  - ceiling <= 2*limit
  - slipped == 0
  - retry_after_missing == 0
`, g0.URL, g1.URL)))
	if out.Report.Status != score.StatusPass {
		for _, th := range out.Report.Thresholds {
			if th.Status != score.StatusPass {
				obs := "not measured"
				if th.Observed != nil {
					obs = fmt.Sprint(*th.Observed)
				}
				t.Errorf("%s: observed %s %s", th.Expr, obs, th.Error)
			}
		}
	}
	if a := measured(t, out, metric.Allowed); a < 20 {
		t.Errorf("allowed %g over 2.5s at 10/s for 2 identities; want at least 20", a)
	}
	if d := measured(t, out, metric.Denied); d == 0 {
		t.Error("no denials at 5× the limit")
	}
	// The gateway tells when Redis decided (X-RateLimit-Decided-At), so the
	// ceiling is exact: its bounds meet.
	if lo, hi := measured(t, out, metric.Ceiling), measured(t, out, metric.CeilingUpper); lo != hi {
		t.Errorf("ceiling [%g, %g]: the gateway's decision times did not make it exact", lo, hi)
	}
	for _, n := range out.Saved.Notes {
		if strings.Contains(n, "decision times run") {
			t.Errorf("one clock on one machine, yet: %s", n)
		}
	}
	h := out.History
	for i := range h.Len() {
		r := h.At(i)
		// Redis TIME and this process read one clock; TIME has whole
		// microseconds.
		if r.Decided == history.NoTime || r.Decided < r.Sent-time.Microsecond || r.Decided > r.Received {
			t.Fatalf("record %d: decided %v, sent %v, received %v (%s by %s)", i, r.Decided, r.Sent, r.Received, r.Outcome, r.By)
		}
	}
}

// Local counters behind N gateways: the measured ceiling is about N×L.
func TestLocalCountersLeakNTimes(t *testing.T) {
	t.Parallel()
	out := run(t, parse(t, `name: local-leak
limit: 10/1s
target: {kind: simulated, algorithm: local-fixed-window, gateways: 5}
traffic: {rate: 200/s, duration: 2s}
`))
	if r := measured(t, out, metric.CeilingRatio); r < 4 || r > 10.5 {
		t.Errorf("ceiling_ratio %g with 5 local gateways; want about 5 (at most 2×5 across a boundary)", r)
	}
}

// The same deployment on a real redis-server with the exact sliding log
// holds the published limit in every span of W; the Lua fixed window holds
// its own envelope (at most 2L across a boundary, nothing slipped).
func TestSharedCountersOnRealRedisHold(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	doc := `name: shared-%[1]s
limit: 10/1s
target: {kind: simulated, algorithm: %[1]s, gateways: 5, redis: %[2]q, timeout: 1s}
traffic: {rate: 200/s, duration: 2.5s}
`
	log := run(t, parse(t, fmt.Sprintf(doc, design.RedisSlidingLog, srv.URL())))
	if c := measured(t, log, metric.Ceiling); c > 10 {
		t.Errorf("sliding log: ceiling %g; want at most 10", c)
	}
	// The note reads the log after the run: it holds what was admitted in
	// the run's last W, at most L (10), fewer when the machine held the
	// last requests back. At 200/s the log admits in bursts at the start
	// of each second, and the key lives W after its last admission: a 2s
	// run left it to expire some 50ms after the run ended, before a loaded
	// machine read it; 2.5s leaves half a second.
	if notes := strings.Join(log.Report.Notes, "\n"); !regexp.MustCompile(`log held ([1-9]|10) entries`).MatchString(notes) {
		t.Errorf("sliding log: no note on the log's size (1 to 10 entries per identity at the end of an overloaded run):\n%s", notes)
	}
	fw := run(t, parse(t, fmt.Sprintf(doc, design.RedisFixedWindow, srv.URL())))
	if c := measured(t, fw, metric.Ceiling); c > 20 {
		t.Errorf("fixed window: ceiling %g; want at most 2L = 20", c)
	}
	for _, out := range []*Outcome{log, fw} {
		if s := measured(t, out, metric.Slipped); s != 0 {
			t.Errorf("%s: slipped %g", out.Report.Name, s)
		}
	}
}

// Redis down for a while: closed endpoints refuse, open ones admit, and no
// decision waits longer than the timeout by much.
//
// Not parallel: it bounds decisions by a 100ms timeout, which the other
// tests' load would break before the fault does.
func TestRedisDownFollowsPolicies(t *testing.T) {
	srv := redistest.Start(t)
	out := run(t, parse(t, fmt.Sprintf(`name: redis-down
limit: 10/1s
target:
  kind: simulated
  algorithm: redis-fixed-window
  gateways: 2
  redis: %q
  timeout: 100ms
  endpoints:
    - {name: login, share: 0.5, on_error: closed}
    - {name: feed, share: 0.5, on_error: open}
traffic: {rate: 100/s, duration: 2s}
faults:
  - {at: 500ms, for: 1s, action: redis-down}
`, srv.URL())))
	if v := measured(t, out, metric.FailOpen); v < 10 {
		t.Errorf("fail_open %g during a 1s outage at 50/s on the open endpoint", v)
	}
	if v := measured(t, out, metric.FailClosed); v < 10 {
		t.Errorf("fail_closed %g during a 1s outage at 50/s on the closed endpoint", v)
	}
	if v := measured(t, out, metric.Max); v > 1000 {
		t.Errorf("slowest decision %gms with a 100ms timeout", v)
	}
}

// A failover to an empty replica, the embedded Redis's emulation (an
// empty Redis swapped in), lets a second quota through with on_failover:
// trust; deny holds it back. Real failovers are in topology_test.go.
func TestFailoverTrustVersusDeny(t *testing.T) {
	t.Parallel()
	doc := `name: failover-%[1]s
limit: 20/1s
target:
  kind: simulated
  algorithm: redis-sliding-log
  gateways: 2
  redis: embedded
  timeout: 2s   # a loaded machine stalls the embedded server: not what is tested
  endpoints: [{name: api, share: 1, on_failover: %[1]s}]
traffic: {rate: 50/s, duration: 2s}
faults: [{at: 1200ms, action: failover}]
`
	// A sliding log, whose windows follow the requests: a fixed window's
	// follow the clock, and a failover late in one let trust admit only
	// what was left of it (21 against deny's 23 in CI). Here trust admits
	// the 10 of [1s, 1.2s) and then a whole second quota, 30 in a W.
	// Until a gateway notices the failover (its marker check runs every
	// 50ms; noticed later than 75ms, the run is rlctl's own slowness,
	// score's noticed check, and runs again), deny too admits on the
	// empty replica, rate × lag of them: at 50/s that stays well short of
	// the second quota trust admits.
	trust := run(t, parse(t, fmt.Sprintf(doc, "trust")))
	deny := run(t, parse(t, fmt.Sprintf(doc, "deny")))
	tv, dv := measured(t, trust, metric.AfterFaultCeiling), measured(t, deny, metric.AfterFaultCeiling)
	t.Logf("after_fault_ceiling: trust %g, deny %g", tv, dv)
	if tv <= 20 {
		t.Errorf("trust: after_fault_ceiling %g; an empty replica should admit a second quota", tv)
	}
	if dv >= tv {
		t.Errorf("deny: after_fault_ceiling %g not below trust's %g", dv, tv)
	}
	// Each identity's own figures in report.json add up to the run's:
	// the worst after_fault_ceiling is the run's, the refusals on noticing
	// the failover sum to its failover_denied.
	for _, out := range []*Outcome{trust, deny} {
		f := out.Report.Failover
		if f == nil || len(f.Identities) != len(out.History.Meta.Identities) {
			t.Fatalf("%s: failover figures per identity %+v, want one per identity of %v", out.Report.Name, f, out.History.Meta.Identities)
		}
		var worst, denied float64
		for _, id := range f.Identities {
			worst = max(worst, id.Metrics[metric.AfterFaultCeiling])
			denied += id.Metrics[metric.FailoverDenied]
		}
		if worst != measured(t, out, metric.AfterFaultCeiling) || denied != measured(t, out, metric.FailoverDenied) {
			t.Errorf("%s: per identity worst after_fault_ceiling %g and failover_denied %g; the run's %g and %g", out.Report.Name,
				worst, denied, measured(t, out, metric.AfterFaultCeiling), measured(t, out, metric.FailoverDenied))
		}
	}
	if measured(t, deny, metric.FailoverDenied) == 0 {
		t.Error("deny: no request refused on noticing the failover")
	}

	// On a Redis the user points at, rlctl starts no replica: the failover
	// is staged there (connections cut, limiter keys gone) and must show
	// the same second quota.
	srv := redistest.Start(t)
	given := run(t, parse(t, strings.Replace(fmt.Sprintf(doc, "trust"), "redis: embedded", "redis: "+srv.URL(), 1)))
	if v := measured(t, given, metric.AfterFaultCeiling); v <= 20 {
		t.Errorf("given Redis: after_fault_ceiling %g; the staged failover should admit a second quota", v)
	}
}

// An unreachable Redis is an error that carries exit code 3, reported
// within the timeout, and the outcome says error.
func TestUnreachableRedis(t *testing.T) {
	t.Parallel()
	sc := parse(t, `name: nowhere
limit: 10/1s
target: {kind: simulated, algorithm: redis-fixed-window, redis: "redis://127.0.0.1:1"}
traffic: {rate: 10/s, duration: 1s}
`)
	start := time.Now()
	out, err := Run(context.Background(), sc, Options{})
	if err == nil {
		t.Fatal("no error for an unreachable Redis")
	}
	if out.Report.Status != score.StatusError {
		t.Errorf("status %q, want error", out.Report.Status)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
}

// A fast run on the embedded Redis says that its figures carry the
// embedded server's own latency; a slow one, or one on a real server,
// does not.
func TestEmbeddedBusyNote(t *testing.T) {
	t.Parallel()
	// A loaded test machine may drop some of 1500/s: the note is the test,
	// not the plan's execution.
	// A limit every run presses (score's pressed check): the note is
	// about the embedded Redis's rate, whatever the limiter decides.
	const doc = `name: busy
limit: 100/1s
target: {kind: simulated, algorithm: redis-fixed-window, gateways: 2%s}
traffic: {rate: %s, duration: 1s}
max_error_rate: 1
`
	hasNote := func(out *Outcome) bool {
		for _, n := range out.Report.Notes {
			if strings.HasPrefix(n, "embedded Redis: ") {
				return true
			}
		}
		return false
	}
	// So busy, the embedded Redis may miss the 50ms timeout often enough
	// for the run to be an error (exit 3): the note must be there anyway.
	out, err := Run(context.Background(), parse(t, fmt.Sprintf(doc, "", "1500/s")), Options{})
	if err != nil && exitcode.Of(err) != exitcode.Unreachable {
		t.Fatalf("1500/s on the embedded Redis: %v", err)
	}
	if !hasNote(out) {
		t.Errorf("1500/s on the embedded Redis: no note in %q", out.Report.Notes)
	}
	// The note goes by the rate alone; the runs that must not carry it get
	// a timeout no stall of a loaded test machine reaches, so they are
	// not errors.
	if out := run(t, parse(t, fmt.Sprintf(doc, ", timeout: 2s", "200/s"))); hasNote(out) {
		t.Errorf("200/s on the embedded Redis: %q", out.Report.Notes)
	}
	if out := run(t, parse(t, fmt.Sprintf(doc, ", redis: spawn, timeout: 2s", "1500/s"))); hasNote(out) {
		t.Errorf("1500/s on a spawned redis-server: %q", out.Report.Notes)
	}
	// A local design keeps its counts in each gateway and never asks the
	// embedded Redis, however fast it runs.
	local := strings.Replace(fmt.Sprintf(doc, "", "1500/s"), "redis-fixed-window", "local-fixed-window", 1)
	if out := run(t, parse(t, local)); hasNote(out) {
		t.Errorf("1500/s of a local design: %q", out.Report.Notes)
	}
}

// An https:// gateway behind a private CA, named in the scenario file by a
// path relative to it: verify trusts it and measures the gateway.
func TestHTTPSGatewayWithPrivateCA(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	l := rate.Limit{Count: 10, Window: time.Second}
	set, err := gateway.New(context.Background(), gateway.Options{
		N: 1, Limiter: limiter.Config{Algorithm: design.RedisFixedWindow, Limit: l, Prefix: "rl:"},
		// Redis decides every request, however busy the machine.
		Endpoints: []gateway.Endpoint{{Name: "default", Share: 1, Policy: limiter.Policy{OnError: "closed", Timeout: time.Second}}},
		NewClient: func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	o := httpgw.Options{Decider: set, Limit: l}
	gw := httptest.NewTLSServer(httpgw.Handler(o, httpgw.NewMetrics(o), 0))
	defer gw.Close()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: gw.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "https.yaml")
	doc := fmt.Sprintf(`name: https-gateway
limit: 10/1s
target:
  kind: http
  urls: [%s/]
  tls: {ca: ca.pem}
  timeout: 2s   # a TLS handshake in a race build on a busy machine
traffic: {rate: 50/s, duration: 1s}
thresholds:
  - errors == 0
  - ceiling <= 2*limit
`, gw.URL)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	scs, err := scenario.Load([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, scs[0])
	if out.Report.Status != score.StatusPass {
		t.Fatalf("status %s: %+v", out.Report.Status, out.Report.Thresholds)
	}
	if a := measured(t, out, metric.Allowed); a < 10 {
		t.Errorf("allowed %g, want at least the limit", a)
	}
}

// An open-model run far above what two workers get through a real
// redis-server: most requests are dropped (tallied, not recorded), the
// workers taking the due ones themselves. Every scheduled request is
// counted once, sent or dropped, the tally adds up, and the fixed window
// still holds its envelope on what was sent.
func TestOverloadOnRealRedisCountsEveryRequest(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	out := run(t, parse(t, fmt.Sprintf(`name: overload
limit: 10/1s
target: {kind: simulated, algorithm: %s, gateways: 5, redis: %q, timeout: 1s}
traffic: {rate: 100000/s, duration: 300ms, workers: 2}
max_error_rate: 1   # the overload is the test: most of the plan is dropped
# A loaded machine answers a handful, none denied: a cap would be pressed
# by luck, so the claim is that every request sent was decided.
thresholds: [errors == 0]
`, design.RedisFixedWindow, srv.URL())))
	requests, dropped := measured(t, out, metric.Requests), measured(t, out, metric.Dropped)
	sent := measured(t, out, metric.Allowed) + measured(t, out, metric.Denied) + measured(t, out, metric.Errors)
	if requests != 30000 || dropped == 0 || sent+dropped != requests {
		t.Fatalf("%g requests (want 30000), %g dropped, %g sent", requests, dropped, sent)
	}
	h := out.History
	d := &h.Meta.Drops
	if err := d.Check(len(h.Meta.Identities), len(h.Meta.Gateways), len(h.Meta.Endpoints)); err != nil || float64(d.Total()) != dropped || float64(h.Len()) != sent {
		t.Fatalf("history: %d records, %d drops tallied (%v); the report says %g sent, %g dropped", h.Len(), d.Total(), err, sent, dropped)
	}
	if c := measured(t, out, metric.Ceiling); c > 20 {
		t.Errorf("ceiling %g; the fixed window admits at most 2L = 20 in any window", c)
	}
	if s := measured(t, out, metric.Slipped); s != 0 {
		t.Errorf("slipped %g", s)
	}
}
