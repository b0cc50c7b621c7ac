package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/verify"
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

func scenarioMetrics(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	scs := r["scenarios"].([]any)
	return scs[0].(map[string]any)["metrics"].(map[string]any)
}

// A run split in two, as if its traffic came from two machines, merges back
// to the whole run's figures exactly.
func TestReportMergeOfHalvesEqualsWhole(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte(`name: halves
limit: 10/1s
target: {kind: simulated, algorithm: redis-fixed-window, gateways: 3, timeout: 1s}
traffic: {rate: 120/s, duration: 2s, identities: 3}
thresholds: [ceiling <= 2*limit]
`), 0o644)
	f, errOut := testFactory(&syncBuffer{}, nil)
	if code := Run(f, []string{"verify", scen, "--no-progress", "--report-dir", filepath.Join(dir, "r")}, nil, noExit(t)); code != 0 {
		t.Fatalf("verify exited %d: %s", code, errOut.String())
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "r", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	whole := runs[0]
	h, err := history.ReadFile(filepath.Join(whole, verify.HistoriesDir, "halves.rlh"))
	if err != nil {
		t.Fatal(err)
	}
	// Two "machines": every other record each.
	halves := []*history.History{history.New(h.Meta, h.Len()/2+1), history.New(h.Meta, h.Len()/2+1)}
	for i := 0; i < h.Len(); i++ {
		halves[i%2].Append(h.At(i))
	}
	var dirs []string
	for i, hh := range halves {
		d := filepath.Join(dir, "m"+string(rune('a'+i)))
		os.MkdirAll(filepath.Join(d, verify.HistoriesDir), 0o755)
		copyFile(t, filepath.Join(whole, "report.json"), filepath.Join(d, "report.json"))
		copyFile(t, filepath.Join(whole, verify.HistoriesDir, "halves.json"), filepath.Join(d, verify.HistoriesDir, "halves.json"))
		if err := hh.WriteFile(filepath.Join(d, verify.HistoriesDir, "halves.rlh")); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	merged := filepath.Join(dir, "merged")
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
	time.Sleep(1500 * time.Millisecond)
	sig <- os.Interrupt
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
	if n := scenarioMetrics(t, r)["requests"].(float64); n < 20 || n > 500 {
		t.Errorf("%g requests recorded in about 1.5s at 50/s", n)
	}
	for _, name := range []string{"report.md", "junit.xml", "report.html", "histories/long.rlh"} {
		if _, err := os.Stat(filepath.Join(runs[0], name)); err != nil {
			t.Errorf("interrupted run lacks %s", name)
		}
	}
}
