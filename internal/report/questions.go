package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/textfmt"
)

// Question is one of the four questions to ask before trusting a limiter,
// answered from what a run measured: a one-sentence answer and the
// scenarios it rests on.
type Question struct {
	// ID names the question in page anchors: atomic, clock, failure,
	// ceiling.
	ID       string
	Ask      string
	Answer   string
	Evidence []Evidence
	// More counts the scenarios that bear on the question beyond those in
	// Evidence.
	More int
}

// Evidence is one scenario's part in an answer.
type Evidence struct {
	Scenario string
	Text     string
	// Bad marks a finding against the design (a race, drift, a leak).
	Bad bool
}

// maxEvidence keeps each answer short enough for a summary read at a
// glance; the table lists every scenario.
const maxEvidence = 3

// measured are the scenarios whose figures can answer: run to the end,
// neither erred nor skipped.
func measured(r *Report) []Scenario {
	var out []Scenario
	for _, sc := range r.Scenarios {
		if sc.Status == score.StatusPass || sc.Status == score.StatusFail {
			out = append(out, sc)
		}
	}
	return out
}

// Questions answers the four questions for r: is every check-and-increment
// atomic, whose clock decides the window, does each endpoint fail open or
// closed when Redis fails, and what is the actual ceiling.
func Questions(r *Report) []Question {
	scs := measured(r)
	return []Question{atomicQuestion(scs), clockQuestion(scs), failureQuestion(scs), ceilingQuestion(scs)}
}

func designName(sc Scenario) string {
	if l := sc.Design.Label(); l != "" {
		return l
	}
	return sc.Name
}

// split keeps the first maxEvidence items and counts the rest.
func (q *Question) add(ev []Evidence) {
	if len(ev) > maxEvidence {
		q.More = len(ev) - maxEvidence
		ev = ev[:maxEvidence]
	}
	q.Evidence = ev
}

func atomicQuestion(scs []Scenario) Question {
	q := Question{ID: "atomic", Ask: "Is every check-and-increment a single atomic operation?"}
	var ev []Evidence
	var bad, good []string
	for _, sc := range scs {
		v, ok := sc.Metrics[metric.RaceExcess]
		if !ok {
			continue
		}
		d := designName(sc)
		if v > 0 {
			bad = append(bad, d)
			ev = append(ev, Evidence{Scenario: sc.Name, Bad: true,
				Text: fmt.Sprintf("%s: %s admitted beyond the one that should pass when gateways checked at once", d, textfmt.Count(v, "extra request"))})
		} else {
			good = append(good, d)
			ev = append(ev, Evidence{Scenario: sc.Name, Text: d + ": no extra request, atomic"})
		}
	}
	switch {
	case len(ev) == 0:
		q.Answer = "Not measured in this run: a scenario with traffic pattern race measures it (race_excess)."
	case len(good) == 0:
		q.Answer = "No: " + strings.Join(bad, ", ") + " let extra requests through when gateways checked at the same instant."
	case len(bad) == 0:
		q.Answer = "Yes: " + strings.Join(good, ", ") + " let no extra request through when gateways checked at the same instant."
	default:
		q.Answer = "Not in every design: " + strings.Join(bad, ", ") + " let extra requests through; " + strings.Join(good, ", ") + " did not."
	}
	q.add(ev)
	return q
}

func clockQuestion(scs []Scenario) Question {
	q := Question{ID: "clock", Ask: "Whose clock decides the window?"}
	var ev []Evidence
	var bad, good int
	byClock := map[string][]string{}
	for _, sc := range scs {
		d := sc.Design
		if d == nil {
			continue
		}
		if d.Clock != "" && !slices.Contains(byClock[d.Clock], d.Algorithm) {
			byClock[d.Clock] = append(byClock[d.Clock], d.Algorithm)
		}
		if d.ClockSkewMs <= 0 {
			continue
		}
		who := d.ClockLabel()
		if s, ok := sc.Metrics[metric.Slipped]; ok && s > 0 {
			bad++
			ev = append(ev, Evidence{Scenario: sc.Name, Bad: true,
				Text: fmt.Sprintf("%s, %s: %s slipped beyond what the design allows", d.Label(), who, textfmt.Count(s, "request"))})
		} else if ok {
			good++
			ev = append(ev, Evidence{Scenario: sc.Name, Text: fmt.Sprintf("%s, %s: none slipped", d.Label(), who)})
		}
	}
	switch {
	case len(ev) == 0:
		var parts []string
		for _, c := range []string{"gateway", "redis"} {
			if a := byClock[c]; len(a) > 0 {
				parts = append(parts, fmt.Sprintf("the %s clock decides in %s", c, strings.Join(a, ", ")))
			}
		}
		q.Answer = "Not tested with skewed clocks in this run (target.clock_skew does)."
		if len(parts) > 0 {
			q.Answer += " By design, " + strings.Join(parts, "; ") + "."
		}
	case good == 0:
		q.Answer = "Each gateway's own: with their clocks apart, requests slipped in every design tested."
	case bad == 0:
		q.Answer = "One clock: with gateway clocks apart, no request slipped."
	default:
		q.Answer = "It must be one: with gateway clocks apart, the designs trusting them let requests slip, and those reading one clock did not."
	}
	q.add(ev)
	return q
}

func failureQuestion(scs []Scenario) Question {
	q := Question{ID: "failure", Ask: "When Redis is unreachable, does each endpoint fail open or fail closed?"}
	var ev []Evidence
	var open, closed float64
	for _, sc := range scs {
		fo := sc.Metrics[metric.FailOpen]
		fc := sc.Metrics[metric.FailClosed]
		afc, hasAfter := sc.Metrics[metric.AfterFaultCeiling]
		var faults []string
		failover, down := false, false
		for _, f := range sc.Faults {
			switch f.Action {
			case design.FaultGatewayDown:
				continue
			case design.FaultFailover:
				failover = true
			default:
				down = true
			}
			faults = append(faults, f.Describe())
		}
		if len(faults) == 0 && len(sc.Outages) == 0 && fo == 0 && fc == 0 {
			continue
		}
		open += fo
		closed += fc
		parts := faults
		if len(sc.Outages) > 0 {
			parts = append(parts, textfmt.Count(len(sc.Outages), "unplanned Redis outage"))
		}
		var figs []string
		if down || len(sc.Outages) > 0 || (!failover && fo+fc > 0) {
			if p := policies(sc.Design, func(e Endpoint) string { return e.OnError }); p != "" {
				figs = append(figs, "on_error "+p)
			}
			figs = append(figs, textfmt.Count(fo, "request")+" admitted unchecked, "+num(fc)+" refused")
		}
		if failover {
			if p := policies(sc.Design, func(e Endpoint) string { return e.OnFailover }); p != "" {
				figs = append(figs, "on_failover "+p)
			}
			if hasAfter && sc.Limit.Count > 0 {
				figs = append(figs, fmt.Sprintf("%s admitted in the window after (%s the limit)", num(afc), textfmt.Ratio(afc/float64(sc.Limit.Count))))
			}
		}
		ev = append(ev, Evidence{Scenario: sc.Name, Text: strings.Join(parts, ", ") + ": " + strings.Join(figs, "; "),
			Bad: (hasAfter && afc > float64(sc.Limit.Count)) || len(sc.Outages) > 0})
	}
	if len(ev) == 0 {
		q.Answer = "Not measured in this run: a redis-down fault shows it (faults: [{at: 1s, for: 1s, action: redis-down}])."
	} else {
		q.Answer = fmt.Sprintf("As each endpoint's on_error and on_failover decide: while Redis failed, %s admitted unchecked and %s refused.",
			textfmt.Count(open, "request"), num(closed))
	}
	q.add(ev)
	return q
}

// policies lists each endpoint's policy as pol reads it: "login closed,
// feed open", or just "open" for a single endpoint.
func policies(d *Design, pol func(Endpoint) string) string {
	if d == nil || len(d.Endpoints) == 0 {
		return ""
	}
	if len(d.Endpoints) == 1 {
		return pol(d.Endpoints[0])
	}
	var out []string
	for _, e := range d.Endpoints {
		out = append(out, e.Name+" "+pol(e))
	}
	return strings.Join(out, ", ")
}

func ceilingQuestion(scs []Scenario) Question {
	q := Question{ID: "ceiling", Ask: "What is your actual ceiling?"}
	var with []Scenario
	for _, sc := range scs {
		if _, ok := sc.Metrics[metric.CeilingRatio]; ok {
			with = append(with, sc)
		}
	}
	slices.SortStableFunc(with, func(a, b Scenario) int {
		return cmp.Compare(b.Metrics[metric.CeilingRatio], a.Metrics[metric.CeilingRatio])
	})
	held := 0
	var slipped []string
	var ev []Evidence
	for _, sc := range with {
		ratio := sc.Metrics[metric.CeilingRatio]
		if ratio <= 1 {
			held++
		}
		if sc.Metrics[metric.Slipped] > 0 {
			slipped = append(slipped, sc.Name)
		}
		ev = append(ev, Evidence{Scenario: sc.Name, Bad: ratio > 1,
			Text: fmt.Sprintf("%s: %s, up to %s per %s against %d", designName(sc), textfmt.Ratio(ratio), num(sc.Metrics[metric.Ceiling]),
				durationMs(sc.Limit.WindowMs), sc.Limit.Count)})
	}
	switch {
	case len(with) == 0:
		q.Answer = "Not measured in this run."
	case held == len(with):
		q.Answer = fmt.Sprintf("The published limit: no identity got more than it in any window, in all %s.", textfmt.Count(len(with), "scenario"))
	default:
		w := with[0]
		q.Answer = fmt.Sprintf("The published limit held in %d of %s; the worst, %s (%s), admitted up to %s in one window: %s the published %d.",
			held, textfmt.Count(len(with), "scenario"), w.Name, designName(w), num(w.Metrics[metric.Ceiling]),
			textfmt.Ratio(w.Metrics[metric.CeilingRatio]), w.Limit.Count)
		if len(slipped) > 0 {
			q.Answer += fmt.Sprintf(" Beyond what their design allows (slipped): %s.", strings.Join(slipped, ", "))
		} else {
			q.Answer += " None let a request slip beyond what its design allows (a fixed window's boundary, a bucket's burst)."
		}
		// The headline counts verdicts, which this count is not.
		q.Answer += " (Verdicts count each scenario's own thresholds: a design may keep its promise above the limit, a flaw passes when it breaks.)"
	}
	q.add(ev)
	return q
}
