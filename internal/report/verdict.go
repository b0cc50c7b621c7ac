package report

import "github.com/rlctl/rlctl/internal/design"

// Verdicts in words: what a scenario's status means for the design it ran.
const (
	VerdictHolds        = "design holds"
	VerdictDoesNotHold  = "design does not hold"
	VerdictFlawShown    = "flaw demonstrated"
	VerdictFlawNotShown = "flaw not demonstrated"
	VerdictNotMeasured  = "not measured"
	VerdictNotRun       = "not run"
)

// Flaw reports whether sc demonstrates a flaw rather than proving a design
// holds.
func (sc Scenario) Flaw() bool { return sc.Shows == design.ShowsFlaw }

// Verdict says in words what sc's status means: a scenario that shows a
// flaw passes when the flaw appears, so its pass reads "flaw
// demonstrated", never as a design that is fine.
func (sc Scenario) Verdict() string {
	switch sc.Status {
	case StatusPass:
		if sc.Flaw() {
			return VerdictFlawShown
		}
		return VerdictHolds
	case StatusFail:
		if sc.Flaw() {
			return VerdictFlawNotShown
		}
		return VerdictDoesNotHold
	case StatusSkipped:
		return VerdictNotRun
	}
	return VerdictNotMeasured
}

// verdictCounts counts the scenarios by verdict, in a fixed order, for
// summary lines: "8 designs hold, 6 flaws demonstrated".
func verdictCounts(r *Report) []string {
	order := []struct{ verdict, one, many string }{
		{VerdictHolds, "design holds", "designs hold"},
		{VerdictFlawShown, "flaw demonstrated", "flaws demonstrated"},
		{VerdictDoesNotHold, "design does not hold", "designs do not hold"},
		{VerdictFlawNotShown, "flaw not demonstrated", "flaws not demonstrated"},
		{VerdictNotMeasured, "not measured", "not measured"},
		{VerdictNotRun, "not run", "not run"},
	}
	n := map[string]int{}
	for _, sc := range r.Scenarios {
		n[sc.Verdict()]++
	}
	var out []string
	for _, o := range order {
		switch c := n[o.verdict]; {
		case c == 1:
			out = append(out, "1 "+o.one)
		case c > 1:
			out = append(out, num(float64(c))+" "+o.many)
		}
	}
	return out
}
