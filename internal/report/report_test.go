package report

import "testing"

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
