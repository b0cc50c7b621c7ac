package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update after checking the change):\n--- got ---\n%s", name, got)
	}
}

func TestJSONGolden(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := JSON(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", buf.Bytes())
}

func TestMarkdownGolden(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Markdown(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.md.golden", buf.Bytes())
}

// TestHTMLGolden pins report.html's markup: the page is written directly,
// so a change to it shows here as a diff to read.
func TestHTMLGolden(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := HTML(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.html.golden", buf.Bytes())
}

func TestTerminalGolden(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Terminal(&buf, fixture(), false); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("\x1b[")) {
		t.Error("colour codes without color")
	}
	golden(t, "terminal.golden", buf.Bytes())

	buf.Reset()
	if err := Terminal(&buf, fixture(), true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(ansiRed+"FAIL"+ansiReset)) {
		t.Error("color: FAIL is not red")
	}
}

// TestJSONContract checks report.json against DESIGN.md's contract by
// decoding it generically, so a renamed Go field cannot slip through.
func TestJSONContract(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := JSON(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "status", "started", "duration_ms", "scenarios"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	if doc["schema"] != "rlctl.report/v1" || doc["status"] != "fail" || doc["started"] != "2026-11-29T22:00:00Z" || doc["duration_ms"] != 12345.0 {
		t.Errorf("header = %v %v %v %v", doc["schema"], doc["status"], doc["started"], doc["duration_ms"])
	}
	scs := doc["scenarios"].([]any)
	first := scs[0].(map[string]any)
	for _, k := range []string{"name", "shows", "status", "error", "limit", "metrics", "thresholds"} {
		if _, ok := first[k]; !ok {
			t.Errorf("scenario lacks %q", k)
		}
	}
	if l := first["limit"].(map[string]any); l["count"] != 20.0 || l["window_ms"] != 1000.0 {
		t.Errorf("limit = %v", l)
	}
	metrics := first["metrics"].(map[string]any)
	if metrics["ceiling"] != 20.0 || metrics["p99_ms"] != 1.875 {
		t.Errorf("metrics = %v", metrics)
	}
	if _, ok := metrics["race_excess"]; ok {
		t.Error("a metric the scenario did not measure appears in JSON")
	}
	th := first["thresholds"].([]any)[0].(map[string]any)
	if th["expr"] != "ceiling <= limit" || th["status"] != "pass" || th["observed"] != 20.0 {
		t.Errorf("threshold = %v", th)
	}
	if race := scs[3].(map[string]any); race["shows"] != "flaw" || race["status"] != "pass" {
		t.Errorf("a flaw demonstrated is %v %v, want shows flaw, status pass", race["shows"], race["status"])
	}
	if b := scs[3].(map[string]any)["thresholds"].([]any)[1].(map[string]any); b["expr"] != "ceiling <= 1.5*limit" || b["bound"] != 30.0 {
		t.Errorf("threshold = %v, want its bound 30", b)
	}
	second := scs[1].(map[string]any)
	unmeasured := second["thresholds"].([]any)[2].(map[string]any)
	if unmeasured["status"] != "fail" || unmeasured["observed"] != nil || unmeasured["error"] == nil {
		t.Errorf("unmeasured threshold = %v, want fail with error and null observed", unmeasured)
	}
	if third := scs[2].(map[string]any); third["status"] != "error" || third["error"] != "reach target: connection refused" {
		t.Errorf("erred scenario = %v", third)
	}
}
