package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/threshold"
)

func TestWriteDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "reports", "20261129T220000Z-builtin")
	if err := WriteDir(dir, fixture(), AllFormats); err != nil {
		t.Fatalf("WriteDir: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"junit.xml", "report.html", "report.json", "report.md"}
	if !slices.Equal(names, want) {
		t.Errorf("files = %v, want exactly %v (no temporary files left)", names, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil || r.Schema != Schema || len(r.Scenarios) != 6 {
		t.Errorf("report.json reads back as %+v, %v", r, err)
	}

	// Rewriting replaces files whole; an unknown format fails before
	// anything is written.
	if err := WriteDir(dir, &Report{}, []string{"json"}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &r); err != nil || len(r.Scenarios) != 0 {
		t.Errorf("rewritten report.json = %s", b)
	}
	other := filepath.Join(t.TempDir(), "x")
	if err := WriteDir(other, fixture(), []string{"json", "pdf"}); err == nil {
		t.Error("unknown format: want an error")
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Error("WriteDir created the directory despite a bad format")
	}
}

func TestThresholdsFromScenario(t *testing.T) {
	t.Parallel()
	var ths []threshold.Threshold
	for _, e := range []string{"ceiling <= limit", "p99 < 5ms", "race_excess == 0"} {
		th, err := threshold.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		ths = append(ths, th)
	}
	m := analysis.Metrics{metric.Ceiling: 25, metric.P99: 2}
	got := Thresholds(ths, m, rate.Limit{Count: 20, Window: time.Second})
	if len(got) != 3 {
		t.Fatalf("got %d", len(got))
	}
	if got[0].Status != StatusFail || got[0].Observed == nil || *got[0].Observed != 25 || got[0].Bound == nil || *got[0].Bound != 20 ||
		got[0].Unit != "" || got[0].BoundWritten {
		t.Errorf("ceiling: %+v", got[0])
	}
	if got[1].Status != StatusPass || *got[1].Observed != 2 || got[1].Bound == nil || *got[1].Bound != 5 || got[1].Unit != "ms" || !got[1].BoundWritten {
		t.Errorf("p99: %+v", got[1])
	}
	if got[2].Status != StatusFail || got[2].Observed != nil || got[2].Error != "race_excess was not measured in this scenario" {
		t.Errorf("unmeasured: %+v", got[2])
	}
}
