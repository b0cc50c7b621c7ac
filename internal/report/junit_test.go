package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/score"
)

// The reader's view of junit.xml, declared independently of the writer's
// types so a tag typo in either shows up.
type readSuites struct {
	XMLName  xml.Name    `xml:"testsuites"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Suites   []readSuite `xml:"testsuite"`
}

type readSuite struct {
	Name     string     `xml:"name,attr"`
	Time     string     `xml:"time,attr"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Errors   int        `xml:"errors,attr"`
	Cases    []readCase `xml:"testcase"`
}

type readCase struct {
	Name      string `xml:"name,attr"`
	Classname string `xml:"classname,attr"`
	Failure   *struct {
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
	} `xml:"error"`
}

func TestJUnitParsesBack(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := JUnit(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		t.Errorf("no XML declaration: %.60s", buf.String())
	}
	var doc readSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, buf.String())
	}
	if doc.Tests != 11 || doc.Failures != 2 || doc.Errors != 2 || doc.Time != "12.345" || doc.Suites[0].Time != "5.012" {
		t.Errorf("totals tests=%d failures=%d errors=%d time=%s, want 11 2 2 12.345 (first suite 5.012)", doc.Tests, doc.Failures, doc.Errors, doc.Time)
	}
	if len(doc.Suites) != 6 {
		t.Fatalf("got %d suites, want one per scenario (6)", len(doc.Suites))
	}
	type want struct {
		suite, name     string
		failure, errMsg string
	}
	// A flaw scenario's cases say so in their names: passing, they mean the
	// flaw showed, not that the design is fine.
	wants := []want{
		{"lua-fixed-window-holds", "ceiling <= limit", "", ""},
		{"lua-fixed-window-holds", "p99 < 5ms", "", ""},
		{"local-counters", "ceiling <= limit", "ceiling <= limit does not hold: observed 980, bound 20", ""},
		{"local-counters", "ceiling_ratio >= 40", "", ""},
		{"local-counters", "p99 < 5ms", "", "p99_ms was not measured in this scenario"},
		{"staging-http", "ceiling <= limit", "", "reach target: connection refused"},
		{"get-incr-race", "shows the flaw: race_excess > 0", "", ""},
		{"get-incr-race", "shows the flaw: ceiling <= 1.5*limit", "", ""},
		{"clock-skew-gateway-clocks", "shows the flaw: sustained_rate > 2*limit", "", ""},
		{"clock-skew-gateway-clocks", "shows the flaw: slipped > 0", "", ""},
		{"ttl-refresh-lockout", "shows the flaw: allowed <= limit", "the flaw did not show: allowed <= limit does not hold: observed 45, bound 20", ""},
	}
	var got []want
	for _, s := range doc.Suites {
		sumF, sumE := 0, 0
		for _, c := range s.Cases {
			if c.Classname != s.Name {
				t.Errorf("case %q classname %q, want the scenario %q", c.Name, c.Classname, s.Name)
			}
			w := want{suite: s.Name, name: c.Name}
			if c.Failure != nil {
				w.failure = c.Failure.Message
				sumF++
			}
			if c.Error != nil {
				w.errMsg = c.Error.Message
				sumE++
			}
			got = append(got, w)
		}
		if s.Tests != len(s.Cases) || s.Failures != sumF || s.Errors != sumE {
			t.Errorf("suite %s counts %d/%d/%d do not match its cases %d/%d/%d", s.Name, s.Tests, s.Failures, s.Errors, len(s.Cases), sumF, sumE)
		}
	}
	if len(got) != len(wants) {
		t.Fatalf("cases = %+v, want %+v", got, wants)
	}
	for i := range wants {
		if got[i] != wants[i] {
			t.Errorf("case %d = %+v, want %+v", i, got[i], wants[i])
		}
	}
}

// writeJUnit settles r, writes its junit.xml and parses it back.
func writeJUnit(t *testing.T, r *Report) (readSuites, string) {
	t.Helper()
	settle(r, false)
	var buf bytes.Buffer
	if err := JUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc readSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc, buf.String()
}

func TestJUnitScenarioErrorWithoutThresholds(t *testing.T) {
	t.Parallel()
	r := &Report{Scenarios: []Scenario{{Name: "x & <y>", Error: `bad "thing"`}}}
	doc, text := writeJUnit(t, r)
	if doc.Errors != 1 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 1 {
		t.Fatalf("doc = %+v, want one erred case", doc)
	}
	c := doc.Suites[0].Cases[0]
	if c.Name != "run" || c.Error == nil || c.Error.Message != `bad "thing"` || doc.Suites[0].Name != "x & <y>" {
		t.Errorf("case = %+v", c)
	}
	if strings.Contains(text, "<y>") {
		t.Error("unescaped text in XML")
	}
}

// busyAndDown are three scenarios not measured: one because rlctl itself
// was too busy, one because the machine's clock was stepped, one because
// nothing answered.
func busyAndDown() *Report {
	busy := Scenario{Name: "late", Status: score.StatusError, Error: "rlctl itself sent late",
		Validity: []score.CheckResult{{Name: "complete", Held: true}, {Name: "kept-time", Reason: "rlctl itself sent late", Busy: true, Again: true}}}
	clock := Scenario{Name: "clock", Status: score.StatusError, Error: "the wall clock moved",
		Validity: []score.CheckResult{{Name: "steady-clock", Reason: "the wall clock moved", Again: true}}}
	down := Scenario{Name: "down", Status: score.StatusError, Error: "nothing answered",
		Validity: []score.CheckResult{{Name: "answered", Reason: "nothing answered"}}}
	return &Report{Scenarios: []Scenario{busy, clock, down}}
}

// A scenario that this machine failed says so in its error's type, so a
// CI job can tell it from any other error and run it again.
func TestJUnitBusyRefusal(t *testing.T) {
	t.Parallel()
	doc, _ := writeJUnit(t, busyAndDown())
	if len(doc.Suites) != 3 {
		t.Fatalf("doc = %+v, want three suites", doc)
	}
	for i, want := range []string{"rlctl-busy", "rlctl-again", "scenario-error"} {
		if c := doc.Suites[i].Cases[0]; c.Error == nil || c.Error.Type != want {
			t.Errorf("%s: error %+v, want type %s", doc.Suites[i].Name, c.Error, want)
		}
	}
}

// An interrupted run's junit.xml says which scenario was cut and which
// never ran, and each testsuite carries its own start and duration.
func TestJUnitInterruptedRun(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	r := &Report{Started: t0, DurationMs: 9000, Scenarios: []Scenario{
		{Name: "first", Started: t0.Add(time.Second), DurationMs: 3000,
			Thresholds: []score.Threshold{{Expr: "ceiling <= limit", Status: score.StatusPass}}},
		{Name: "cut", Status: score.StatusError, Started: t0.Add(5 * time.Second), DurationMs: 1200,
			Error:      "interrupted after 1.2s of 3s: the figures cover only what ran, and its thresholds were not judged",
			Thresholds: []score.Threshold{{Expr: "ceiling <= limit", Status: score.StatusPass}}},
		{Name: "never", Status: score.StatusSkipped, Error: "not run: the run was interrupted before it started"},
	}}
	settle(r, true)
	var buf bytes.Buffer
	if err := JUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Errors  int `xml:"errors,attr"`
		Skipped int `xml:"skipped,attr"`
		Suites  []struct {
			Name      string `xml:"name,attr"`
			Time      string `xml:"time,attr"`
			Timestamp string `xml:"timestamp,attr"`
			Errors    int    `xml:"errors,attr"`
			Skipped   int    `xml:"skipped,attr"`
			Cases     []struct {
				Error *struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if doc.Errors != 1 || doc.Skipped != 1 {
		t.Errorf("totals errors=%d skipped=%d, want 1 and 1:\n%s", doc.Errors, doc.Skipped, buf.String())
	}
	want := []struct{ time, stamp string }{
		{"3.000", "2026-11-30T10:00:01"}, {"1.200", "2026-11-30T10:00:05"}, {"0.000", "2026-11-30T10:00:00"},
	}
	for i, w := range want {
		s := doc.Suites[i]
		if s.Time != w.time || s.Timestamp != w.stamp {
			t.Errorf("%s: time %s at %s, want %s at %s", s.Name, s.Time, s.Timestamp, w.time, w.stamp)
		}
	}
	if c := doc.Suites[1].Cases[0]; c.Error == nil || !strings.Contains(c.Error.Message, "interrupted after 1.2s") {
		t.Errorf("the cut scenario's first case is not an error naming the interruption: %+v", c)
	}
	if c := doc.Suites[2].Cases[0]; c.Skipped == nil || !strings.Contains(c.Skipped.Message, "not run") {
		t.Errorf("the scenario never run is not skipped with a message: %+v", c)
	}
	if r.Status != score.StatusIncomplete || r.Scenarios[2].Status != score.StatusSkipped {
		t.Errorf("report %s, never-run scenario %s", r.Status, r.Scenarios[2].Status)
	}
}

// Each testsuite says what the scenario shows and its verdict in words, as
// properties and at the top of its output, so a flaw demonstrated never
// reads as a design that holds.
func TestJUnitVerdicts(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := JUnit(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Out string `xml:"system-out"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"lua-fixed-window-holds": {"holds", "design holds"},
		"local-counters":         {"holds", "design does not hold"},
		"staging-http":           {"holds", "not measured"},
		"get-incr-race":          {"flaw", "flaw demonstrated"},
		"ttl-refresh-lockout":    {"flaw", "flaw not demonstrated"},
	}
	for _, s := range doc.Suites {
		w, ok := want[s.Name]
		if !ok {
			continue
		}
		props := map[string]string{}
		for _, p := range s.Props {
			props[p.Name] = p.Value
		}
		if props["shows"] != w[0] || props["verdict"] != w[1] {
			t.Errorf("%s: shows=%q verdict=%q, want %q %q", s.Name, props["shows"], props["verdict"], w[0], w[1])
		}
		if !strings.HasPrefix(s.Out, "verdict: ") || !strings.Contains(strings.SplitN(s.Out, "\n", 2)[0], w[1]) {
			t.Errorf("%s: output does not open with its verdict %q: %q", s.Name, w[1], s.Out)
		}
	}
	if !strings.Contains(buf.String(), `name="design" value="redis-token-bucket ×4, gateway clock, skew ±300ms"`) {
		t.Error("no design property with the clock skew")
	}
}
