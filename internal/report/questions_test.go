package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/score"
)

// The four questions of the first write-up are answered from a real run of
// the built-in suite, each resting on the scenarios that measured it.
func TestQuestionsAnswerFromTheRun(t *testing.T) {
	t.Parallel()
	qs := Questions(suiteReport(t))
	want := []struct {
		id       string
		answer   []string
		evidence []string
	}{
		{"atomic", []string{"Not in every design", "redis-get-incr"}, []string{"get-incr-race", "lua-race-holds"}},
		{"clock", []string{"must be one"}, []string{"clock-skew-gateway-clocks", "clock-skew-redis-time"}},
		{"failure", []string{"42 requests admitted unchecked", "61 refused"}, []string{"fail-open-vs-closed", "failover-trust", "failover-deny"}},
		{"ceiling", []string{"local-counters-leak", "11.45×", "slipped"}, []string{"local-counters-leak"}},
	}
	if len(qs) != len(want) {
		t.Fatalf("%d questions, want %d", len(qs), len(want))
	}
	for i, w := range want {
		q := qs[i]
		if q.ID != w.id {
			t.Errorf("question %d is %s, want %s", i, q.ID, w.id)
		}
		for _, s := range w.answer {
			if !strings.Contains(q.Answer, s) {
				t.Errorf("%s: answer %q lacks %q", q.ID, q.Answer, s)
			}
		}
		var names []string
		for _, e := range q.Evidence {
			names = append(names, e.Scenario)
		}
		for _, s := range w.evidence {
			if !strings.Contains(strings.Join(names, " "), s) {
				t.Errorf("%s: evidence %v lacks %s", q.ID, names, s)
			}
		}
	}
}

// A run that measured nothing a question needs says so and how to measure
// it, never a confident answer.
func TestQuestionsNotMeasured(t *testing.T) {
	t.Parallel()
	r := &Report{Scenarios: []Scenario{{Name: "plain", Status: score.StatusPass, Metrics: map[string]float64{}}}}
	for _, q := range Questions(r) {
		if !strings.HasPrefix(q.Answer, "Not ") || len(q.Evidence) != 0 {
			t.Errorf("%s: %q with %d pieces of evidence, want a not-measured answer", q.ID, q.Answer, len(q.Evidence))
		}
	}
}

// suiteReport is the report of a real run of the built-in suite
// (testdata/suite.json, from rlctl verify on this code): fifteen
// scenarios, their faults and notes, so the summary is measured at its real
// height.
func suiteReport(t *testing.T) *Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "suite.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Scenarios) != 15 {
		t.Fatalf("testdata/suite.json holds %d scenarios, want the built-in 15", len(r.Scenarios))
	}
	r.Suite = "builtin"
	return &r
}
