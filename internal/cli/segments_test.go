package cli_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/httpgw"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/rundir"
	"github.com/rlctl/rlctl/internal/traffic"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
)

// admissions is a gateway's own log of what it admitted, at Redis TIME
// (the instant its limiter decided, on the clock the windows are counted
// by): the truth a run's ceiling bounds must contain.
type admissions struct {
	mu sync.Mutex
	at map[string][]time.Time
}

// take returns the log so far and starts a new one.
func (a *admissions) take() map[string][]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.at
	a.at = map[string][]time.Time{}
	return out
}

// ceiling is the most admitted within any window [t, t+w) of one
// identity, the worst identity's.
func ceiling(log map[string][]time.Time, w time.Duration) int {
	best := 0
	for _, ts := range log {
		slices.SortFunc(ts, time.Time.Compare)
		lo := 0
		for hi := range ts {
			for ts[hi].Sub(ts[lo]) >= w {
				lo++
			}
			best = max(best, hi-lo+1)
		}
	}
	return best
}

// loggingDecider is the gateways' limiter, logging each admission.
type loggingDecider struct {
	*gateway.Set
	log *admissions
	t   *testing.T
}

func (d loggingDecider) Decide(ctx context.Context, gw, ep int, id string) (limiter.Decision, error) {
	dec, err := d.Set.Decide(ctx, gw, ep, id)
	if err == nil && dec.Allowed {
		if dec.ServerTime.IsZero() {
			d.t.Errorf("an admission without Redis TIME: the truth needs the limiter's own clock")
		}
		d.log.mu.Lock()
		d.log.at[id] = append(d.log.at[id], dec.ServerTime)
		d.log.mu.Unlock()
	}
	return dec, err
}

// withoutDecidedAt drops the decision time from the answers, as most
// gateways (not rlctl's) answer: the run then knows each decision only
// within its request's send and receive.
func withoutDecidedAt(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(dropHeader{w}, r)
	})
}

type dropHeader struct{ http.ResponseWriter }

func (d dropHeader) WriteHeader(code int) {
	d.Header().Del(decision.DecidedAtHeader)
	d.ResponseWriter.WriteHeader(code)
}

func (d dropHeader) Write(b []byte) (int, error) {
	d.Header().Del(decision.DecidedAtHeader)
	return d.ResponseWriter.Write(b)
}

// startGateways serves two HTTP gateways on loopback in front of a real
// redis-server, the algorithm's limit of lim on Redis TIME, and returns their URLs, the admissions log and the Redis.
func startGateways(t *testing.T, algorithm string, lim rate.Limit, decidedAt bool) ([]string, *admissions, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	set, err := gateway.New(ctx, gateway.Options{
		N:         2,
		Limiter:   limiter.Config{Algorithm: algorithm, Limit: lim, Clock: limiter.ClockRedis, Prefix: "seg:"},
		NewClient: func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr}) },
		// The machine may be busy: the limiter's calls get time enough.
		Endpoints: []gateway.Endpoint{{Name: "default", Share: 1, Policy: limiter.Policy{Timeout: 2 * time.Second}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	log := &admissions{at: map[string][]time.Time{}}
	o := httpgw.Options{Decider: loggingDecider{Set: set, log: log, t: t}, Limit: lim}
	m := httpgw.NewMetrics(o)
	var urls []string
	for gw := range 2 {
		h := httpgw.Handler(o, m, gw)
		if !decidedAt {
			h = withoutDecidedAt(h)
		}
		hs := httptest.NewServer(h)
		t.Cleanup(hs.Close)
		urls = append(urls, hs.URL+"/")
	}
	return urls, log, srv
}

// rlctl runs the rlctl command (this test binary, see TestMain) and
// returns its run directory: the one directory under reportDir.
func rlctl(ctx context.Context, t *testing.T, reportDir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "rlctl", append(args, "--report-dir", reportDir, "--no-progress", "--format", "json")...)
	cmd.Env = append(os.Environ(), "RLCTL_REDIS_URL=", "REDIS_URL=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("rlctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	dirs, _ := filepath.Glob(filepath.Join(reportDir, "*", "report.json"))
	if len(dirs) != 1 {
		return "", fmt.Errorf("rlctl %s: %d run directories under %s\n%s", strings.Join(args, " "), len(dirs), reportDir, out)
	}
	return filepath.Dir(dirs[0]), nil
}

// runSegments starts one rlctl verify per segment at once, each with the
// extra arguments given for it, and returns their run directories, or the
// first error a segment met.
func runSegments(t *testing.T, scenario string, perSegment [][]string) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dirs := make([]string, len(perSegment))
	errs := make([]error, len(perSegment))
	var wg sync.WaitGroup
	for i, extra := range perSegment {
		wg.Go(func() {
			dirs[i], errs[i] = rlctl(ctx, t, filepath.Join(t.TempDir(), fmt.Sprint(i)), append([]string{"verify", scenario}, extra...)...)
		})
	}
	wg.Wait()
	return dirs, errors.Join(errs...)
}

// runSegmentsOnTime is runSegments with the common start lead from now
// (args gives each segment's arguments for it), run again, three times in
// all (calmtest.Retry), while a segment's history says it started, or sent
// a request, more than late after its time, or the segments' starts spread
// more than late apart: a machine too busy to start a process or send on
// time measured nothing about a shared start. Each try starts on an
// emptied Redis, and the gateways' log taken anew. It returns the run
// directories, each opened (closed when the test ends), and that log.
func runSegmentsOnTime(t *testing.T, scenario string, srv *redistest.Server, log *admissions, lead, late time.Duration, args func(start string) [][]string) ([]string, []*rundir.SavedRun, map[string][]time.Time) {
	t.Helper()
	var dirs []string
	var rds []*rundir.SavedRun
	var took map[string][]time.Time
	var tooLate error
	calmtest.Retry(t, 3, func(int) string {
		tooLate = nil
		for _, rd := range rds {
			rd.Close()
		}
		rds = nil
		if err := srv.Client(t).FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		log.take()
		start := time.Now().Add(lead).UTC().Format(time.RFC3339Nano)
		var err error
		dirs, err = runSegments(t, scenario, args(start))
		took = log.take()
		switch {
		case err != nil && strings.Contains(err.Error(), traffic.ErrLate.Error()):
			// The process itself reached the start too late to send: the
			// same busy machine as one that started late, refused.
			tooLate = err
			return fmt.Sprintf("a segment reached the common start too late (a busy machine): %v", err)
		case err != nil:
			t.Fatal(err)
		}
		var first, last time.Time
		var worst time.Duration
		for _, d := range dirs {
			rd, err := rundir.OpenRunDir(d)
			if err != nil {
				t.Fatal(err)
			}
			rds = append(rds, rd)
			for _, h := range rd.History {
				worst = max(worst, h.Meta.Late, traffictest.WorstSendLag(h))
				if first.IsZero() || h.Meta.Start.Before(first) {
					first = h.Meta.Start
				}
				if h.Meta.Start.After(last) {
					last = h.Meta.Start
				}
			}
		}
		if worst > late || last.Sub(first) > late {
			return fmt.Sprintf("a segment started or sent a request %v late, the starts %v apart (a busy machine)", worst, last.Sub(first))
		}
		return ""
	})
	t.Cleanup(func() {
		for _, rd := range rds {
			rd.Close()
		}
	})
	if tooLate != nil {
		t.Fatal(tooLate)
	}
	return dirs, rds, took
}

// metrics reads a run directory's only scenario's figures.
func metrics(t *testing.T, dir string) analysis.Metrics {
	t.Helper()
	rd, err := rundir.OpenRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	if len(rd.Report.Scenarios) != 1 {
		t.Fatalf("%s: %d scenarios", dir, len(rd.Report.Scenarios))
	}
	return rd.Report.Scenarios[0].Metrics
}

// writeScenario writes a scenario of the limit 10/200ms against the
// gateways at urls, with the given traffic, and returns its path.
func writeScenario(t *testing.T, name string, lim rate.Limit, urls []string, traffic string) string {
	t.Helper()
	// The published limit is the gateways' own (lim): the run measures its
	// windows, and the tests compare with what the gateways admitted in
	// the same windows. A clock window admits up to 2L in a sliding
	// window: that is the claim, the default ceiling <= limit is not. The
	// tests bracket the gateways' own counts, which a few requests dropped
	// on a stalled machine do not change.
	body := fmt.Sprintf("name: %s\nlimit: %s\ntarget:\n  kind: http\n  urls: [%q, %q]\n  timeout: 2s\ntraffic: %s\nthresholds: [ceiling <= 2 * limit]\nmax_error_rate: 0.1\n", name, lim, urls[0], urls[1], traffic)
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// bracket fails unless a run's ceiling bounds contain truth.
func bracket(t *testing.T, what string, m analysis.Metrics, truth int) {
	t.Helper()
	if lo, hi := m[metric.Ceiling], m[metric.CeilingUpper]; float64(truth) < lo || float64(truth) > hi {
		t.Fatalf("%s ceiling [%v, %v] does not contain the gateways' own %d", what, lo, hi, truth)
	}
}

// Three processes, each sending its third of the identities from one
// common start, merge into the run one process makes of the same plan:
// the same requests, and ceiling bounds that contain what the gateways
// themselves admitted within a window.
func TestSegmentsMergeIntoTheWholeRun(t *testing.T) {
	t.Parallel()
	lim := rate.Limit{Count: 10, Window: 200 * time.Millisecond}
	urls, log, srv := startGateways(t, design.RedisClockWindow, lim, true)
	sc := writeScenario(t, "segments", lim, urls, "{rate: 600/s, duration: 1s, identities: 6}")

	// A machine that stalls for longer than the gateways' timeout leaves
	// every worker waiting, and the run drops its plan (exit 3): it
	// measured the stall, not the plan, so it runs again, three times in
	// all (calmtest.Retry), on an emptied Redis.
	var one string
	var err error
	calmtest.Retry(t, 3, func(int) string {
		if err := srv.Client(t).FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		log.take()
		one, err = rlctl(context.Background(), t, t.TempDir(), "verify", sc)
		if err != nil && strings.Contains(err.Error(), "every worker was waiting on a slow answer") {
			return err.Error()
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	whole := metrics(t, one)
	wholeTruth := ceiling(log.take(), lim.Window)

	dirs, rds, took := runSegmentsOnTime(t, sc, srv, log, 2*time.Second, 100*time.Millisecond, func(start string) [][]string {
		var args [][]string
		for i := range 3 {
			args = append(args, []string{"--segment", fmt.Sprintf("%d/3", i), "--start-at", start, "--redis", "redis://" + srv.Addr})
		}
		return args
	})
	truth := ceiling(took, lim.Window)

	var starts []time.Time
	for i, rd := range rds {
		h := rd.History["segments"]
		m := h.Meta
		if m.Segment == "" || m.Clock.Reference != "redis TIME" || m.Clock.Uncertainty <= 0 || m.Late > 200*time.Millisecond {
			t.Fatalf("segment %d: segment %q, clock %+v, late %v; want its segment, a clock read on redis TIME, on time", i, m.Segment, m.Clock, m.Late)
		}
		starts = append(starts, m.Start)
		// No identity is sent from two segments.
		for j := range h.Len() {
			if id := h.At(j).Identity; id/2 != uint32(i) {
				t.Fatalf("segment %d sent identity %s", i, m.Identities[id])
			}
		}
	}
	slices.SortFunc(starts, time.Time.Compare)
	if spread := starts[2].Sub(starts[0]); spread > 100*time.Millisecond {
		t.Fatalf("the segments started %v apart; want one common start", spread)
	}

	out := filepath.Join(t.TempDir(), "merged")
	if _, err := exec.Command("rlctl", append(append([]string{"report", "merge"}, dirs...), "--out", out, "--format", "json")...).CombinedOutput(); err != nil {
		t.Fatal(err)
	}
	merged := metrics(t, out)
	if merged[metric.Requests] != whole[metric.Requests] || merged[metric.Requests] != 600 {
		t.Fatalf("merged segments sent %v requests, the single process %v; want 600 both", merged[metric.Requests], whole[metric.Requests])
	}
	bracket(t, "merged", merged, truth)
	// A fixed window's sliding maximum depends on where the run met the
	// windows (L to 2L), so each run is held to what the gateways admitted
	// during it.
	bracket(t, "single process", whole, wholeTruth)
	t.Logf("merged [%v, %v], %v requests, the gateways' own %d; single process [%v, %v], %v requests, the gateways' own %d",
		merged[metric.Ceiling], merged[metric.CeilingUpper], merged[metric.Requests], truth,
		whole[metric.Ceiling], whole[metric.CeilingUpper], whole[metric.Requests], wholeTruth)
}

// One of two processes sharing a single identity's requests has a clock a
// second behind, so it starts a second late without knowing. Its history
// says where its clock stood against Redis TIME; the merge moves it there
// and its ceiling bounds contain what the gateways admitted. Merged as
// the clocks read, without the correction, the two runs overlap, and the
// ceiling's lower bound exceeds what was ever admitted in a window.
func TestMergeCorrectsAClockOffset(t *testing.T) {
	t.Parallel()
	// A window far longer than a request takes on a loaded machine (answers
	// a second slow were seen): the uncorrected merge's definite count, both
	// segments' admissions in one window, must not depend on it. The skew
	// is the window and a second, so the skewed segment runs once the first
	// one's admissions have left the window, though that one started late:
	// with the window alone, a busy make test had all 119 of the skewed
	// segment's requests denied.
	const skew = -4 * time.Second
	lim := rate.Limit{Count: 10, Window: 3 * time.Second}
	urls, log, srv := startGateways(t, design.RedisSlidingLog, lim, false)
	sc := writeScenario(t, "skewed", lim, urls, "{rate: 400/s, duration: 600ms, identities: 1, segment: requests}")
	// The skewed segment starts its skew late without knowing it: its
	// history measures Late on its own clock, so that is no lateness here.
	dirs, rds, took := runSegmentsOnTime(t, sc, srv, log, 1500*time.Millisecond, 100*time.Millisecond, func(start string) [][]string {
		common := []string{"--start-at", start, "--redis", "redis://" + srv.Addr}
		return [][]string{
			append([]string{"--segment", "0/2"}, common...),
			append([]string{"--segment", "1/2", "--clock-skew", skew.String()}, common...),
		}
	})
	truth := ceiling(took, lim.Window)
	// A sliding log admits at most L in any window, and each run alone
	// asks for more than that.
	if truth != int(lim.Count) {
		t.Fatalf("the gateways admitted at most %d in a window; want the limit, %d", truth, lim.Count)
	}

	var hs []*history.History
	var saved rundir.Saved
	for _, rd := range rds {
		hs, saved = append(hs, rd.History["skewed"]), rd.Saved["skewed"]
	}
	if off := hs[1].Meta.Clock.Offset; off < skew-50*time.Millisecond || off > skew+50*time.Millisecond || hs[1].Meta.Late > 100*time.Millisecond {
		t.Fatalf("skewed segment: clock %+v, late %v; want an offset of %v found, and no lateness seen", hs[1].Meta.Clock, hs[1].Meta.Late, skew)
	}

	out := filepath.Join(t.TempDir(), "merged")
	// Each --report-dir holds its one run, as each pod of the Kubernetes
	// example writes: report merge reads it from there.
	if b, err := exec.Command("rlctl", "report", "merge", filepath.Dir(dirs[0]), filepath.Dir(dirs[1]), "--out", out, "--format", "json").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	m := metrics(t, out)
	bracket(t, "merged", m, truth)

	for _, h := range hs {
		h.Meta.Clock = history.Clock{}
	}
	naive, err := history.Merge(hs...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rundir.Score(naive, saved)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gateways' own ceiling %d; merged [%v, %v]; merged without the correction from %v", truth, m[metric.Ceiling], m[metric.CeilingUpper], r.Metrics[metric.Ceiling])
	if lo := r.Metrics[metric.Ceiling]; lo <= float64(truth) {
		t.Fatalf("merged without the clock correction, ceiling %v; want above the gateways' own %d (a bound that is not one); segments: %s; merged without it: %s; its error %q, notes %q",
			lo, truth, segmentsSeen(hs), allowedSeen(naive), r.Error, r.Notes)
	}
}

// allowedSeen lists h's admissions as identity@gateway [sent, received]
// decided, so a failure shows where the analysis placed each.
func allowedSeen(h *history.History) string {
	var b strings.Builder
	fmt.Fprintf(&b, "start %s, identities %v: ", h.Meta.Start.Format(time.RFC3339Nano), h.Meta.Identities)
	for k := range h.Len() {
		if r := h.At(k); r.Outcome == decision.Allowed {
			fmt.Fprintf(&b, "%d@%d [%v, %v] %v; ", r.Identity, r.Gateway, r.Sent, r.Received, r.Decided)
		}
	}
	return b.String()
}

// segmentsSeen says, for each segment's history, when it started and
// what its requests got, so a failure shows which segment saw what.
func segmentsSeen(hs []*history.History) string {
	var b strings.Builder
	for i, h := range hs {
		c := map[decision.Outcome]int{}
		first, last := time.Duration(-1), time.Duration(-1)
		for k := range h.Len() {
			r := h.At(k)
			c[r.Outcome]++
			if r.Outcome == decision.Allowed {
				if first < 0 {
					first = r.Sent
				}
				last = r.Sent
			}
		}
		fmt.Fprintf(&b, "[%d: start %s late %v, outcomes %v, allowed sent from %v to %v] ", i, h.Meta.Start.Format(time.RFC3339Nano), h.Meta.Late, c, first, last)
	}
	return b.String()
}
