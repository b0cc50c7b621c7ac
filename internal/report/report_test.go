package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/analysis"
)

func TestFinish(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		scenarios  []Scenario
		incomplete bool
		want       string
		wantEach   []string
	}{
		{"all pass", []Scenario{{Thresholds: []Threshold{{Status: StatusPass}}}}, false, StatusPass, []string{StatusPass}},
		{"no thresholds pass", []Scenario{{}}, false, StatusPass, []string{StatusPass}},
		{"one threshold fails", []Scenario{{Thresholds: []Threshold{{Status: StatusPass}, {Status: StatusFail}}}, {}}, false, StatusFail, []string{StatusFail, StatusPass}},
		{"error", []Scenario{{Error: "boom"}}, false, StatusFail, []string{StatusError}},
		{"interrupted", []Scenario{{}}, true, StatusIncomplete, []string{StatusPass}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &Report{Scenarios: tt.scenarios, Incomplete: tt.incomplete}
			r.Finish()
			if r.Status != tt.want || r.Schema != Schema {
				t.Errorf("status = %q schema %q, want %q %q", r.Status, r.Schema, tt.want, Schema)
			}
			for i, w := range tt.wantEach {
				if r.Scenarios[i].Status != w {
					t.Errorf("scenario %d status = %q, want %q", i, r.Scenarios[i].Status, w)
				}
			}
		})
	}
}

// TestIncompleteSaysSo checks every human format tells the reader an
// interrupted run's figures are partial.
func TestIncompleteSaysSo(t *testing.T) {
	t.Parallel()
	r := fixture()
	r.Incomplete = true
	r.Finish()
	writers := map[string]func(*bytes.Buffer) error{
		"md":       func(b *bytes.Buffer) error { return Markdown(b, r) },
		"html":     func(b *bytes.Buffer) error { return HTML(b, r) },
		"terminal": func(b *bytes.Buffer) error { return Terminal(b, r, false) },
	}
	for name, write := range writers {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "interrupted") {
			t.Errorf("%s does not say the run was interrupted", name)
		}
	}
	var buf bytes.Buffer
	if err := JSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"status": "incomplete"`) {
		t.Error("report.json status is not incomplete")
	}
}

// TestTimelineLimitCountsIdentities: the timeline sums all identities, so
// its limit line must be the per-identity limit times the identities.
func TestTimelineLimitCountsIdentities(t *testing.T) {
	t.Parallel()
	r := fixture()
	r.Scenarios = r.Scenarios[:1]
	r.Scenarios[0].Result.PerIdentity = make([]analysis.IdentityResult, 3)
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	want := "the published limit for all 3 identities scaled to the interval (20/s per identity = 6 per 100ms)"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("timeline caption lacks %q", want)
	}
}
