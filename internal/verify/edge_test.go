package verify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/score"
)

// listen returns a loopback listener the test closes at its end.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// serveConns runs handle on every connection ln accepts.
func serveConns(ln net.Listener, handle func(net.Conn)) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
}

func httpDoc(url, extra string) string {
	return fmt.Sprintf(`name: edge
limit: 20/1s
target: {kind: http, urls: [%q], timeout: 300ms}
traffic: {rate: 100/s, duration: 1s}
thresholds: [ceiling <= limit, slipped == 0]
%s`, url, extra)
}

// An http target that never answers is unreachable before the clock
// starts (exit 3, naming the URL), whether its port is closed, speaks
// something else, or accepts and stays silent; never a pass on nothing.
func TestHTTPTargetThatNeverAnswersIsUnreachable(t *testing.T) {
	t.Parallel()
	closed := listen(t)
	closedURL := "http://" + closed.Addr().String() + "/"
	closed.Close()

	notHTTP := listen(t)
	serveConns(notHTTP, func(c net.Conn) {
		defer c.Close()
		// As a Redis would: read the request, answer in its own protocol.
		c.Read(make([]byte, 4096))
		c.Write([]byte("-ERR unknown command\r\n"))
		time.Sleep(time.Second)
	})
	silent := listen(t)
	var held atomic.Int64
	serveConns(silent, func(c net.Conn) {
		held.Add(1)
		defer c.Close()
		time.Sleep(10 * time.Second)
	})

	for _, tt := range []struct {
		name, url, want string
	}{
		{"closed port", closedURL, "connection refused"},
		{"not http", "http://" + notHTTP.Addr().String() + "/", "malformed HTTP"},
		{"silent", "http://" + silent.Addr().String() + "/", "timeout awaiting response headers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, err := Run(context.Background(), parse(t, httpDoc(tt.url, "")), Options{})
			if exitcode.Of(err) != exitcode.Unreachable {
				t.Fatalf("err %v (exit %d), want exit 3", err, exitcode.Of(err))
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("took %v to find a target with a 300ms timeout unreachable", took)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.url) || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not name the URL and %q", msg, tt.want)
			}
			if out.Report.Status != score.StatusError || out.Report.ExitCode != int(exitcode.Unreachable) {
				t.Errorf("report status %s, exit %d", out.Report.Status, out.Report.ExitCode)
			}
		})
	}
}

// A target that answers the probe and then stops answering ran, but
// measured nothing: an error with exit 3, whatever its thresholds say
// (ceiling <= limit holds trivially at 0).
func TestTargetThatStopsAnsweringIsAnError(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			return // the probe
		}
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("no hijacker")
		}
		c, _, _ := hj.Hijack()
		c.Close()
	}))
	defer srv.Close()
	out, err := Run(context.Background(), parse(t, httpDoc(srv.URL+"/", "")), Options{})
	if exitcode.Of(err) != exitcode.Unreachable {
		t.Fatalf("err %v (exit %d), want exit 3", err, exitcode.Of(err))
	}
	if out.Report.Status != score.StatusError || !strings.Contains(out.Report.Error, "nothing answered") {
		t.Errorf("status %s, error %q", out.Report.Status, out.Report.Error)
	}
	for _, th := range out.Report.Thresholds {
		if th.Expr == "ceiling <= limit" && th.Status != score.StatusPass {
			t.Errorf("ceiling <= limit should hold at 0 (the trap this check closes); got %s", th.Status)
		}
	}
}

// Errors above max_error_rate make a run an error (exit 1: the target
// answered, mostly); at or below it the run is judged by its thresholds.
func TestMaxErrorRate(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%10 == 0 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	doc := func(extra string) string {
		return fmt.Sprintf(`name: edge
limit: 1000/1s
target: {kind: http, urls: [%q], timeout: 1s}
traffic: {rate: 200/s, duration: 1s}
thresholds: [allowed > 0]
%s`, srv.URL+"/", extra)
	}
	out, err := Run(context.Background(), parse(t, doc("")), Options{})
	if exitcode.Of(err) != exitcode.Failed {
		t.Fatalf("10%% errors under the default 1%%: err %v (exit %d), want exit 1", err, exitcode.Of(err))
	}
	if !strings.Contains(out.Report.Error, "got no deciding answer, above max_error_rate 1%") {
		t.Errorf("error %q", out.Report.Error)
	}
	out, err = Run(context.Background(), parse(t, doc("max_error_rate: 0.2")), Options{})
	if err != nil || out.Report.Status != score.StatusPass {
		t.Fatalf("10%% errors under max_error_rate 0.2: %v, status %s (%s)", err, out.Report.Status, out.Report.Error)
	}
	found := false
	for _, note := range out.Report.Notes {
		found = found || strings.Contains(note, "within max_error_rate 20%")
	}
	if !found {
		t.Errorf("errors within the bound are not reported: %q", out.Report.Notes)
	}
}

// A Redis that dies mid-run with no fault planned: the gateways fail open
// from then on, and the run says so, with the outage's span, and exits 3
// rather than blaming the design.
func TestRedisDyingMidRunIsUnreachable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	sc := parse(t, `name: dies
limit: 20/1s
target: {algorithm: redis-fixed-window, gateways: 2, timeout: 1s}
traffic: {rate: 200/s, duration: 2500ms}
thresholds: [ceiling <= limit]
`)
	// Killed about a second into the traffic; the run's setup before its
	// clock starts takes a while of its own, so the kill time is recorded
	// and compared with the run's start afterwards.
	killed := make(chan time.Time, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		srv.Deployment.Kill(0)
		killed <- time.Now()
	}()
	out, err := Run(context.Background(), sc, Options{Redis: srv.URL()})
	if exitcode.Of(err) != exitcode.Unreachable {
		t.Fatalf("err %v (exit %d), want exit 3", err, exitcode.Of(err))
	}
	r := out.Report
	if len(r.Outages) == 0 || r.Outages[0].FailOpen == 0 {
		t.Fatalf("no outage with fail-open decisions in the report: %+v", r.Outages)
	}
	o := r.Outages[0]
	at := float64((<-killed).Sub(r.Started).Milliseconds())
	if at < 200 || at > 2300 {
		t.Fatalf("Redis was killed at %vms of a 2500ms run: setup took too long for the test to say anything", at)
	}
	if o.FromMs < at-200 || o.FromMs > at+800 || o.ToMs < 2000 {
		t.Errorf("outage from %vms to %vms; Redis died at %vms and stayed down", o.FromMs, o.ToMs, at)
	}
	if !strings.Contains(r.Error, "Redis did not decide") || !strings.Contains(r.Error, "failed open") || !regexp.MustCompile(`t=[0-9.]+s–[0-9.]+s`).MatchString(r.Error) {
		t.Errorf("error does not say what happened: %q", r.Error)
	}
}

// A Redis that stalls (CLIENT PAUSE) while the open model keeps sending:
// requests are dropped because every worker waits on Redis, and the note
// blames the slow target, not rlctl.
func TestStalledRedisDropsBlameTheTarget(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	sc := parse(t, `name: stall
limit: 20/1s
target: {algorithm: redis-fixed-window, gateways: 2, timeout: 1s}
traffic: {rate: 1000/s, duration: 2s, workers: 50}
thresholds: [ceiling <= limit]
`)
	go func() {
		time.Sleep(500 * time.Millisecond)
		admin.Do(context.Background(), "CLIENT", "PAUSE", "800", "ALL")
	}()
	out, err := Run(context.Background(), sc, Options{Redis: srv.URL()})
	if err != nil && exitcode.Of(err) != exitcode.Unreachable {
		t.Fatalf("err %v", err)
	}
	if out.Report.Metrics["dropped"] == 0 {
		t.Fatalf("nothing dropped while Redis stalled: %v", out.Report.Metrics)
	}
	var note string
	for _, n := range out.Report.Notes {
		if strings.Contains(n, "requests were dropped") {
			note = n
		}
	}
	if !strings.Contains(note, "the target was slow, not rlctl") {
		t.Errorf("drop note %q does not blame the stalled target", note)
	}
	if strings.Contains(note, "rlctl, not the limiter, was the bottleneck") {
		t.Errorf("drop note blames rlctl: %q", note)
	}
}

// An interrupted scenario keeps its figures but no verdict.
func TestInterruptedScenarioIsNotJudged(t *testing.T) {
	t.Parallel()
	sc := parse(t, `name: cut
limit: 20/1s
target: {algorithm: local-fixed-window}
traffic: {rate: 100/s, duration: 5s}
thresholds: [ceiling <= limit]
`)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	out, err := Run(ctx, sc, Options{})
	if !errors.Is(err, context.DeadlineExceeded) && exitcode.Of(err) != exitcode.Interrupted {
		t.Fatalf("err %v", err)
	}
	if !out.Interrupted || out.Report.Status != score.StatusError || !strings.Contains(out.Report.Error, "interrupted after") {
		t.Errorf("interrupted %v, status %s, error %q", out.Interrupted, out.Report.Status, out.Report.Error)
	}
	if out.Report.Metrics["requests"] == 0 {
		t.Error("the figures of what ran are gone")
	}
}

// A target that answers the probe and then goes silent, under a schedule
// its two workers cannot keep: the workers hang until their timeout and
// nearly every request is dropped (tallied, with no record). That run
// measured nothing either: an error with exit 3, never a pass on the
// drops alone.
func TestSilentTargetWithDropsIsAnError(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			return // the probe
		}
		<-r.Context().Done() // silent until the client gives up
	}))
	defer srv.Close()
	doc := fmt.Sprintf(`name: silent
limit: 20/1s
target: {kind: http, urls: [%q], timeout: 200ms}
traffic: {rate: 400/s, duration: 1s, workers: 2}
thresholds: [ceiling <= limit, slipped == 0]
`, srv.URL+"/")
	out, err := Run(context.Background(), parse(t, doc), Options{})
	if exitcode.Of(err) != exitcode.Unreachable {
		t.Fatalf("err %v (exit %d), want exit 3", err, exitcode.Of(err))
	}
	if out.Report.Status != score.StatusError || !strings.Contains(out.Report.Error, "nothing answered") {
		t.Errorf("status %s, error %q", out.Report.Status, out.Report.Error)
	}
	if d := out.Report.Metrics[metric.Dropped]; d < 300 {
		t.Errorf("%g requests dropped; the run was meant to drop most of its 400", d)
	}
}
