package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
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
