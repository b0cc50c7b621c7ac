package report

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/rlctl/rlctl/internal/score"
)

// JUnit document types, in the layout common CI readers accept (Jenkins,
// GitLab, GitHub test reporters): <testsuites> with totals, one
// <testsuite> per scenario, one <testcase> per threshold.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit writes junit.xml. A failed threshold is a <failure> whose message
// carries the observed value; a threshold that could not be checked, and a
// scenario that could not run, was cut short or measured nothing, is an
// <error>. A scenario that shows a flaw names each case "shows the flaw:
// EXPR", so a passing case never reads as a design that is fine; each
// testsuite's output opens with its verdict in words. A scenario that erred before any threshold gets one test case
// named "run" holding the error; one never started (an interrupted run) is
// a "run" case marked <skipped>. Each testsuite carries its scenario's own
// start and duration.
func JUnit(w io.Writer, r *Report) error {
	doc := junitSuites{Name: "rlctl verify", Time: seconds(r.DurationMs)}
	if r.Suite != "" {
		doc.Name += " " + r.Suite
	}
	for _, sc := range r.Scenarios {
		start := sc.Started
		if start.IsZero() {
			start = r.Started
		}
		s := junitSuite{Name: sc.Name, Time: seconds(sc.DurationMs), Timestamp: start.UTC().Format("2006-01-02T15:04:05")}
		s.Properties = append(s.Properties,
			junitProperty{Name: "shows", Value: sc.Shows},
			junitProperty{Name: "verdict", Value: sc.Verdict},
			junitProperty{Name: "limit", Value: sc.Limit.String()})
		if d := sc.Design.LongLabel(); d != "" {
			s.Properties = append(s.Properties, junitProperty{Name: "design", Value: d})
		}
		if sc.Target != "" {
			s.Properties = append(s.Properties, junitProperty{Name: "target", Value: sc.Target})
		}
		for _, n := range orderedMetrics(sc.Metrics) {
			s.Properties = append(s.Properties, junitProperty{Name: n, Value: num(sc.Metrics[n])})
		}
		for _, t := range sc.Thresholds {
			c := junitCase{Name: t.Expr, Classname: sc.Name, Time: "0"}
			if t.Default {
				c.Name += " (default claim: no thresholds given)"
			}
			if sc.Flaw() {
				// A CI page lists cases by name: this one passing means a
				// flaw showed, which its name must say.
				c.Name = "shows the flaw: " + t.Expr
			}
			switch {
			case t.Error != "":
				c.Error = &junitProblem{Message: t.Error, Type: "not-measured", Text: t.Expr + ": " + t.Error}
			case t.Status != score.StatusPass:
				msg := fmt.Sprintf("%s does not hold: %s", t.Expr, figures(t))
				if sc.Flaw() {
					msg = "the flaw did not show: " + msg
				}
				c.Failure = &junitProblem{Message: msg, Type: "threshold", Text: msg}
			}
			s.Cases = append(s.Cases, c)
		}
		if sc.Status == score.StatusSkipped {
			s.Cases = []junitCase{{Name: "run", Classname: sc.Name, Time: "0", Skipped: &junitSkipped{Message: sc.Error}}}
		} else if sc.Status == score.StatusError || sc.Error != "" {
			if len(s.Cases) == 0 {
				s.Cases = append(s.Cases, junitCase{Name: "run", Classname: sc.Name, Time: "0"})
			}
			// Marking the first case keeps the counts honest: the
			// scenario erred once, not once per threshold.
			if s.Cases[0].Error == nil {
				// A CI job may run a scenario that this machine
				// failed again (rlctl too busy, the clock stepped), and
				// no other error.
				kind := "scenario-error"
				switch {
				case sc.Busy():
					kind = "rlctl-busy"
				case sc.Again():
					kind = "rlctl-again"
				}
				s.Cases[0].Failure = nil
				s.Cases[0].Error = &junitProblem{Message: sc.Error, Type: kind, Text: sc.Error}
			}
		}
		for _, c := range s.Cases {
			s.Tests++
			if c.Failure != nil {
				s.Failures++
			}
			if c.Error != nil {
				s.Errors++
			}
			if c.Skipped != nil {
				s.Skipped++
			}
		}
		s.SystemOut = strings.Join(append([]string{verdictLine(sc)}, sc.Notes...), "\n")
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
		doc.Suites = append(doc.Suites, s)
	}
	b := bufio.NewWriter(w)
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	b.WriteString("\n")
	if err := b.Flush(); err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	return nil
}

// verdictLine opens a testsuite's output with its verdict in words.
func verdictLine(sc Scenario) string {
	s := "verdict: " + upper(sc.Status) + " · " + sc.Verdict
	if sc.Flaw() {
		s += " (this scenario shows a flaw: it passes when the run reproduces it, and the design it ran is not safe as configured)"
	}
	return s
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }
