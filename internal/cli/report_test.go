package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/rundir"
)

func readReportJSON(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// verifyCalm runs verify on file into the report directory rd and returns
// the run's directory; the test fails unless the run passed. The run is
// only material for what the test checks: one refused because rlctl itself
// was too busy (its embedded Redis went unanswered while the machine
// stalled for seconds) is run again, three times in all (calmtest.Retry).
func verifyCalm(t *testing.T, file, rd string, extra ...string) string {
	t.Helper()
	var code int
	var errOut *syncBuffer
	calmtest.Retry(t, 3, func(int) string {
		os.RemoveAll(rd)
		var f *Factory
		f, errOut = testFactory(&syncBuffer{}, nil)
		code = Run(f, append([]string{"verify", file, "--no-progress", "--report-dir", rd}, extra...), nil, noExit(t))
		if code != 0 && busyRun(rd) {
			return errOut.String()
		}
		return ""
	})
	if code != 0 {
		t.Fatalf("verify %s %v exited %d: %s", file, extra, code, errOut.String())
	}
	runs, _ := filepath.Glob(filepath.Join(rd, "*"))
	if len(runs) != 1 {
		t.Fatalf("verify %s %v wrote %v, want one run", file, extra, runs)
	}
	return runs[0]
}

// busyRun reports whether the run under reports had a scenario refused
// because rlctl itself was too busy to measure it (report.Scenario.Busy).
func busyRun(reports string) bool {
	rd, err := rundir.OpenRunDir(reports)
	if err != nil {
		return false
	}
	defer rd.Close()
	return slices.ContainsFunc(rd.Report.Scenarios, report.Scenario.Busy)
}

func scenarioMetrics(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	scs := r["scenarios"].([]any)
	return scs[0].(map[string]any)["metrics"].(map[string]any)
}

// A run split in two, as if its traffic came from two machines, merges back
// to the whole run's figures exactly.
func TestReportMergeOfHalvesEqualsWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte(`name: halves
limit: 10/1s
target: {kind: simulated, algorithm: redis-fixed-window, gateways: 3, timeout: 1s}
traffic: {rate: 120/s, duration: 2s, identities: 3}
thresholds: [ceiling <= 2*limit]
`), 0o644)
	whole := verifyCalm(t, scen, filepath.Join(dir, "r"))
	h, err := history.ReadFile(filepath.Join(whole, rundir.HistoriesDir, "halves.rlh"))
	if err != nil {
		t.Fatal(err)
	}
	// Two "machines", each half of the plan's requests: every other
	// record each.
	halves := make([]*history.History, 2)
	for i, seg := range []string{"0:1/2", "1/2:1"} {
		m := h.Meta
		m.Segment = seg
		halves[i] = history.New(m, h.Len()/2+1)
	}
	for i := 0; i < h.Len(); i++ {
		halves[i%2].Append(h.At(i))
	}
	var dirs []string
	for i, hh := range halves {
		d := filepath.Join(dir, "m"+string(rune('a'+i)))
		os.MkdirAll(filepath.Join(d, rundir.HistoriesDir), 0o755)
		copyFile(t, filepath.Join(whole, "report.json"), filepath.Join(d, "report.json"))
		copyFile(t, filepath.Join(whole, rundir.HistoriesDir, "halves.json"), filepath.Join(d, rundir.HistoriesDir, "halves.json"))
		if err := hh.WriteFile(filepath.Join(d, rundir.HistoriesDir, "halves.rlh")); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	merged := filepath.Join(dir, "merged")
	f, errOut := testFactory(&syncBuffer{}, nil)
	if code := Run(f, append([]string{"report", "merge", "--out", merged}, dirs...), nil, noExit(t)); code != 0 {
		t.Fatalf("merge exited %d: %s", code, errOut.String())
	}
	want := scenarioMetrics(t, readReportJSON(t, whole))
	got := scenarioMetrics(t, readReportJSON(t, merged))
	for _, k := range []string{"requests", "allowed", "denied", "ceiling", "ceiling_upper", "burst",
		"sustained_rate", "slipped", "p50_ms", "p99_ms", "max_ms"} {
		if got[k] != want[k] {
			t.Errorf("%s: merged %v, whole run %v", k, got[k], want[k])
		}
	}
	// A half alone is not the whole: the test can tell them apart.
	if code := Run(f, []string{"report", "render", dirs[0], "--out", filepath.Join(dir, "half")}, nil, noExit(t)); code != 0 && code != 1 {
		t.Fatalf("render exited %d", code)
	}
	if half := scenarioMetrics(t, readReportJSON(t, filepath.Join(dir, "half"))); half["requests"] == want["requests"] {
		t.Errorf("half run has as many requests as the whole")
	}
}

// report merge refuses what cannot be one plan's segments before writing
// anything (exit 2): a run given twice, a copy of one, an --out that is
// an input or already exists; and a merge missing a segment is scored but
// not measured (exit 1), never a pass on half a plan. A merge of both
// says what it joined.
func TestReportMergeRefusesWhatIsNotOnePlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte(`name: halves
limit: 10/1s
target: {kind: simulated, algorithm: redis-fixed-window, gateways: 2, timeout: 1s}
traffic: {rate: 60/s, duration: 1s, identities: 2}
thresholds: [ceiling <= 2*limit]
`), 0o644)
	var segs []string
	for i := range 2 {
		segs = append(segs, verifyCalm(t, scen, filepath.Join(dir, fmt.Sprintf("r%d", i)), "--segment", fmt.Sprintf("%d/2", i)))
	}
	copyDir(t, segs[0], filepath.Join(dir, "copy"))
	before, _ := os.ReadFile(filepath.Join(segs[0], "report.json"))
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"one run twice", []string{segs[0], segs[0]}, 2, "sent the same share of the plan"},
		{"a copy of a run", []string{segs[0], filepath.Join(dir, "copy")}, 2, "sent the same share of the plan"},
		{"out is an input", []string{segs[0], segs[1], "--out", segs[0]}, 2, "is the run"},
		{"out exists", []string{segs[0], segs[1], "--out", segs[1]}, 2, "is the run"},
		{"out holds something", []string{segs[0], segs[1], "--out", dir}, 2, "already exists"},
		{"one run by two paths", []string{segs[0], segs[0] + "/../" + filepath.Base(segs[0])}, 2, "sent the same share of the plan"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, errOut := testFactory(&syncBuffer{}, nil)
			args := append([]string{"report", "merge"}, tt.args...)
			out := filepath.Join(t.TempDir(), "merged")
			if !slices.Contains(tt.args, "--out") {
				args = append(args, "--out", out)
			}
			if code := Run(f, args, nil, noExit(t)); code != tt.code || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("exit %d, want %d; stderr %q, want %q", code, tt.code, errOut.String(), tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("the refused merge left %s behind", out)
			}
		})
	}
	if after, _ := os.ReadFile(filepath.Join(segs[0], "report.json")); !bytes.Equal(before, after) {
		t.Error("a refused merge changed a run it was given")
	}

	// A second run sends the other half of the first scenario and half of
	// another: that one's other half is missing, so it is not measured; a
	// run that shares no scenario with the first is refused.
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte(`name: other
limit: 10/1s
target: {kind: simulated, algorithm: redis-fixed-window, gateways: 2, timeout: 1s}
traffic: {rate: 200/s, duration: 300ms, identities: 2}
thresholds: [ceiling <= 2*limit]
`), 0o644)
	both := filepath.Join(dir, "both.yaml")
	a, _ := os.ReadFile(scen)
	b, _ := os.ReadFile(other)
	os.WriteFile(both, append(append(a, []byte("---\n")...), b...), 0o644)
	secondHalf := verifyCalm(t, both, filepath.Join(dir, "rb"), "--segment", "1/2")
	f, errOut := testFactory(&syncBuffer{}, nil)
	if code := Run(f, []string{"report", "merge", segs[0], secondHalf, "--out", filepath.Join(dir, "partial")}, nil, noExit(t)); code != 1 {
		t.Errorf("a merge missing half of one scenario exited %d, want 1: %s", code, errOut.String())
	}
	for _, sc := range readReportJSON(t, filepath.Join(dir, "partial"))["scenarios"].([]any) {
		m := sc.(map[string]any)
		want := map[string]string{"halves": "pass", "other": "error"}[m["name"].(string)]
		if m["status"] != want || (want == "error" && !strings.Contains(m["error"].(string), "none sent 0:1/2")) {
			t.Errorf("%s: status %v (%v), want %s", m["name"], m["status"], m["error"], want)
		}
	}
	onlyOther := verifyCalm(t, other, filepath.Join(dir, "ro"))
	f, errOut = testFactory(&syncBuffer{}, nil)
	if code := Run(f, []string{"report", "merge", segs[0], onlyOther, "--out", filepath.Join(dir, "foreign")}, nil, noExit(t)); code != 2 || !strings.Contains(errOut.String(), "shares no scenario") {
		t.Errorf("a run of another scenario: exit %d, %q", code, errOut.String())
	}

	// Both halves: merged, and the report says what it joined.
	merged := filepath.Join(dir, "merged")
	f, errOut = testFactory(&syncBuffer{}, nil)
	if code := Run(f, []string{"report", "merge", segs[0], segs[1], "--out", merged}, nil, noExit(t)); code != 0 {
		t.Fatalf("merge of both halves exited %d: %s", code, errOut.String())
	}
	sc := readReportJSON(t, merged)["scenarios"].([]any)[0].(map[string]any)
	notes := fmt.Sprint(sc["notes"])
	if !strings.Contains(notes, "merge of 2 runs: segment 0:1/2 (clock") || !strings.Contains(notes, "segment 1/2:1 (clock") || strings.Contains(notes, "this run sent segment") {
		t.Errorf("the merged report does not say what it joined: %s", notes)
	}
	f, errOut = testFactory(&syncBuffer{}, nil)
	if code := Run(f, []string{"report", "merge", segs[0], segs[1], "--out", merged}, nil, noExit(t)); code != 2 {
		t.Errorf("a second merge into the same --out exited %d: %s", code, errOut.String())
	}
}

// copyDir copies a run directory, as a user copying a run would.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		copyFile(t, p, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Ctrl-C during verify stops the traffic, still writes every report with
// what was measured, marks it incomplete and exits 130.
func TestVerifyInterruptedWritesIncompleteReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scen := filepath.Join(dir, "long.yaml")
	os.WriteFile(scen, []byte(`name: long
limit: 10/1s
target: {kind: simulated, algorithm: redis-fixed-window, gateways: 2, timeout: 1s}
traffic: {rate: 50/s, duration: 30s}
`), 0o644)
	f, errOut := testFactory(&syncBuffer{}, nil)
	sig := make(chan os.Signal, 2)
	done := make(chan int)
	go func() {
		done <- Run(f, []string{"verify", scen, "--no-progress", "--report-dir", filepath.Join(dir, "r")}, sig, noExit(t))
	}()
	start := time.Now()
	time.Sleep(1500 * time.Millisecond)
	sig <- os.Interrupt
	before := time.Since(start)
	select {
	case code := <-done:
		if code != 130 {
			t.Fatalf("exit %d, want 130: %s", code, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("verify did not stop after the interrupt")
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "r", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	r := readReportJSON(t, runs[0])
	if r["status"] != "incomplete" {
		t.Errorf("status %v, want incomplete", r["status"])
	}
	// What was sent before the interrupt is kept, and nothing after it:
	// at 50/s no more than the time before the signal allows. How many is
	// up to the machine (a busy one starts the traffic late), so the
	// floor is one.
	if n, most := scenarioMetrics(t, r)["requests"].(float64), 50*before.Seconds()+5; n < 1 || n > most {
		t.Errorf("%g requests recorded in the %v before the interrupt at 50/s; want 1 to %.0f", n, before, most)
	}
	for _, name := range []string{"report.md", "junit.xml", "report.html", "histories/long.rlh"} {
		if _, err := os.Stat(filepath.Join(runs[0], name)); err != nil {
			t.Errorf("interrupted run lacks %s", name)
		}
	}
}
