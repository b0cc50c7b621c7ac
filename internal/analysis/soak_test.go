//go:build linux

package analysis

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/idletest"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// A soak run's analysis is measured in a child process (this test binary
// run again with soakEnv set), so its peak resident memory is its own.
const (
	soakEnv     = "RLCTL_SOAK_RECORDS" // records to generate and analyse
	soakModeEnv = "RLCTL_SOAK_MODE"    // "disk" (spilled, the default) or "memory"
	// soakCeiling is the most resident memory the spilled analysis of
	// soakRecords may take: the history alone would take 1.85 GB.
	soakCeiling = 300 << 20
	soakRecords = 50_000_000
)

// soakHistory appends n records like a long run's: 100 s of traffic at
// constant rate from 20 gateways for ids identities, about half allowed,
// in completion order. It uses a xorshift generator inline, so 50 million
// records take seconds.
func soakHistory(h *history.History, n, ids int) {
	x := uint64(88172645463325252)
	next := func() uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x
	}
	period := max(1, int64(100*time.Second)/int64(n))
	for i := range n {
		v := next()
		in := int64(i) * period
		sent := in + int64(v&0xffff)
		r := history.Record{
			Intended: time.Duration(in), Sent: time.Duration(sent), Received: time.Duration(sent + 200_000 + int64(v>>16&0x1fffff)),
			Decided: history.NoTime, RetryAfter: history.NoTime, Identity: uint32((v >> 40) % uint64(ids)),
			Round: history.NoRound, Gateway: uint16(v >> 56 % 20), Outcome: decision.Allowed, By: decision.ByRedis,
		}
		if v>>63 == 0 {
			r.Outcome, r.RetryAfter = decision.Denied, time.Duration(v>>20&0x3fffffff)
		}
		h.Append(r)
	}
}

func soakMeta(n, ids int) history.Meta {
	meta := history.Meta{Scenario: "soak", Limit: rate.Limit{Count: max(1, int64(n/ids/200)), Window: time.Second}}
	for i := range ids {
		meta.Identities = append(meta.Identities, fmt.Sprintf("user-%d", i))
	}
	for i := range 20 {
		meta.Gateways = append(meta.Gateways, fmt.Sprintf("gw-%d", i))
	}
	return meta
}

// TestMain runs the soak child when asked to.
func TestMain(m *testing.M) {
	if s := os.Getenv(soakEnv); s != "" {
		os.Exit(soakChild(s, os.Getenv(soakModeEnv)))
	}
	os.Exit(m.Run())
}

// soakChild generates and analyses a soak history, and prints the figures
// the parent checks: records, requests counted, allowed, the seconds the
// analysis took and its own peak resident memory (VmHWM).
func soakChild(records, mode string) int {
	n, err := strconv.Atoi(records)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	const ids = 1000
	h := history.New(soakMeta(n, ids), 0)
	if mode == "memory" {
		h.Grow(n)
	} else if err := h.Spill(history.SpillOptions{Dir: os.Getenv("TMPDIR")}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer h.Close()
	soakHistory(h, n, ids)
	if path := os.Getenv("RLCTL_SOAK_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	start := time.Now()
	res, err := Analyze(h, Options{})
	took := time.Since(start)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("records=%d requests=%.0f allowed=%.0f ceiling=%.0f analysis_s=%.2f peak_rss_mb=%d\n",
		n, res.Metrics[metric.Requests], res.Metrics[metric.Allowed], res.Metrics[metric.Ceiling], took.Seconds(), vmHWM()>>20)
	return 0
}

// vmHWM is this process's peak resident memory in bytes, from /proc.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// runSoak runs the soak child and returns its figures and its peak
// resident memory as the kernel counted it.
func runSoak(t testing.TB, n int, mode string) (map[string]float64, int64) {
	t.Helper()
	// At idle priority: its figure is memory, not time, and its cores are
	// better left to the timing-sensitive tests beside it.
	cmd := idletest.Command(soakBinary(t), "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", soakEnv, n), soakModeEnv+"="+mode, "TMPDIR="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("soak child: %v\n%s", err, out)
	}
	figs := map[string]float64{}
	for _, kv := range strings.Fields(string(out)) {
		k, v, _ := strings.Cut(kv, "=")
		figs[k], _ = strconv.ParseFloat(v, 64)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return figs, ru.Maxrss << 10 // kilobytes on Linux
}

// soakBinary is the test binary the soak child runs: this one, or under
// the race detector (which multiplies memory and time) the same tests
// built without it.
func soakBinary(t testing.TB) string {
	if !raceEnabled {
		return os.Args[0]
	}
	bin := filepath.Join(t.TempDir(), "soak.test")
	// Built with the Dockerfile binary's flags (CGO_ENABLED=0, -trimpath),
	// so the two share one build of the standard library, and at idle
	// priority, one build at a time: see idletest.
	cmd := idletest.Go("test", "-c", "-trimpath", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := idletest.Build(cmd); err != nil {
		t.Fatalf("build the soak child without -race: %v\n%s", err, out)
	}
	return bin
}

// TestSpilledAnalysisOf50MRecordsStaysUnderMemoryCeiling records 50
// million decisions into a spilling history and analyses them, in a child
// process whose peak resident memory must stay under soakCeiling - a sixth
// of what the history alone takes in memory.
func TestSpilledAnalysisOf50MRecordsStaysUnderMemoryCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("50 million records: not in -short")
	}
	t.Parallel()
	start := time.Now()
	figs, rss := runSoak(t, soakRecords, "disk")
	t.Logf("%d records: analysis %.1fs, peak RSS %d MB (child's own count %.0f MB), whole test %s",
		soakRecords, figs["analysis_s"], rss>>20, figs["peak_rss_mb"], time.Since(start).Round(time.Second))
	if figs["requests"] != soakRecords || figs["allowed"] < soakRecords/3 || figs["ceiling"] <= 0 {
		t.Fatalf("analysis figures wrong: %v", figs)
	}
	if rss > soakCeiling {
		t.Fatalf("peak RSS %d MB, ceiling %d MB", rss>>20, soakCeiling>>20)
	}
}
