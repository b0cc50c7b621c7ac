package score

import (
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/textfmt"
)

// Summary is what a whole run comes to.
type Summary struct {
	// Status is pass, fail or incomplete (report.json's status).
	Status string
	// Code is the run's exit code: the worst its scenarios call for.
	Code exitcode.Code
	// Reason says why a run with no measured scenario fails, "" otherwise.
	Reason string
	// Counts are the verdicts counted, in a fixed order: "8 designs hold",
	// "6 flaws demonstrated".
	Counts []string
}

// Suite decides a run from its scenarios' verdicts: incomplete when
// interrupted; else pass only when at least one scenario ran and every
// one that ran passed (a skipped one changes nothing). A run with no
// scenario, or whose every scenario was skipped, measured nothing and
// fails with exit 2: nothing here could be run.
func Suite(vs []Verdict, interrupted bool) Summary {
	s := Summary{Status: StatusPass, Code: exitcode.OK, Counts: Counts(vs)}
	ran := false
	for _, v := range vs {
		if v.Status == StatusSkipped {
			continue
		}
		ran = true
		if v.Status != StatusPass {
			s.Status = StatusFail
		}
		s.Code = max(s.Code, v.Code)
	}
	switch {
	case interrupted:
		s.Status, s.Code = StatusIncomplete, exitcode.Interrupted
	case len(vs) == 0:
		s.Status, s.Code, s.Reason = StatusFail, exitcode.Usage, "no scenario to run: nothing was measured"
	case !ran:
		s.Status, s.Code, s.Reason = StatusFail, exitcode.Usage, "every scenario was skipped: nothing was measured"
	}
	return s
}

// verdictOrder is the order verdicts are counted in, with their singular
// and plural wording.
var verdictOrder = []struct{ words, one, many string }{
	{Holds, "design holds", "designs hold"},
	{FlawShown, "flaw demonstrated", "flaws demonstrated"},
	{DoesNotHold, "design does not hold", "designs do not hold"},
	{FlawNotShown, "flaw not demonstrated", "flaws not demonstrated"},
	{NotMeasured, "not measured", "not measured"},
	{NotRun, "not run", "not run"},
}

// Counts counts verdicts by their words, in a fixed order, for summary
// lines: "8 designs hold, 6 flaws demonstrated".
func Counts(vs []Verdict) []string {
	n := map[string]int{}
	for _, v := range vs {
		n[v.Words]++
	}
	var out []string
	for _, o := range verdictOrder {
		switch c := n[o.words]; {
		case c == 1:
			out = append(out, "1 "+o.one)
		case c > 1:
			out = append(out, textfmt.Num(float64(c))+" "+o.many)
		}
	}
	return out
}
