package score

import (
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
)

// Statuses of a scenario, and of a whole run (report.json's status).
const (
	StatusPass = "pass"
	StatusFail = "fail"
	// StatusError is a scenario that could not be run (target
	// unreachable, a bad script), was cut short, or ran without measuring
	// what it claims; the run's status is then fail.
	StatusError = "error"
	// StatusSkipped is a scenario never started: the run was interrupted
	// before it, or the deployment lacks what it requires. It does not
	// fail the run, unless every scenario was skipped.
	StatusSkipped = "skipped"
	// StatusIncomplete is a run that was interrupted.
	StatusIncomplete = "incomplete"
)

const showsFlaw = design.ShowsFlaw

// Verdicts in words: what a scenario's status means for the design it
// ran. A scenario that shows a flaw passes when the flaw appears, so its
// pass reads "flaw demonstrated", never as a design that is fine.
const (
	Holds        = "design holds"
	DoesNotHold  = "design does not hold"
	FlawShown    = "flaw demonstrated"
	FlawNotShown = "flaw not demonstrated"
	NotMeasured  = "not measured"
	NotRun       = "not run"
)

// Verdict is what a scenario's run comes to.
type Verdict struct {
	// Status is pass, fail, error or skipped.
	Status string
	// Words is the verdict in words (Holds, FlawShown, …).
	Words string
	// Reason says why a scenario was not measured or not run, "" when it
	// was.
	Reason string
	// Code is the exit code the scenario calls for.
	Code exitcode.Code
	// Thresholds are the claim's thresholds checked against the figures
	// (shown even when the run was not measured, whose verdict they do
	// not decide).
	Thresholds []Threshold
	// Checks are the validity checks that applied to the run, each held or
	// not; those after the first failed one were not tried.
	Checks []CheckResult
	// Notes are the findings in words.
	Notes []string
}

// Judge decides the verdict of a scenario that ran: the validity table
// first (Checks), then its thresholds.
func Judge(c Claim, f Facts) Verdict {
	v := Verdict{Status: StatusPass, Code: exitcode.OK}
	ths, byDefault := claimOf(c)
	v.Thresholds = Thresholds(ths, f.Metrics, c.Limit)
	for i := range v.Thresholds {
		v.Thresholds[i].Default = byDefault
	}
	var notes []string
	for _, ch := range Checks {
		why, applies := ch.test(c, f)
		if !applies {
			continue
		}
		busy := why != "" && ch.busy != nil && ch.busy(c, f)
		v.Checks = append(v.Checks, CheckResult{Name: ch.Name, Held: why == "", Reason: why,
			Busy: busy, Again: busy || why != "" && ch.again != nil && ch.again(c, f),
			Late: why != "" && ch.late != nil && ch.late(c, f)})
		switch {
		case why == "":
		case ch.NoteOnly:
			notes = append(notes, why)
		default:
			v.Status, v.Reason, v.Code = StatusError, why, ch.Code
			if ch.codeOf != nil {
				v.Code = ch.codeOf(c, f)
			}
		}
		if v.Status == StatusError {
			break
		}
	}
	if v.Status != StatusError {
		for _, t := range v.Thresholds {
			if t.Status != StatusPass {
				v.Status, v.Code = StatusFail, exitcode.Failed
			}
		}
	}
	v.Words = Words(c.Shows, v.Status)
	v.Notes = findings(c, f, v, notes)
	return v
}

// NotMeasuredBy is the verdict of a scenario that could not run at all:
// its target or Redis could not be set up, its input was refused. err
// says why and carries the exit code.
func NotMeasuredBy(c Claim, err error) Verdict {
	return Verdict{Status: StatusError, Words: NotMeasured, Reason: err.Error(), Code: codeOf(err)}
}

// codeOf is err's exit code; an error that names none, or an
// interruption, fails the scenario.
func codeOf(err error) exitcode.Code {
	if c := exitcode.Of(err); c != exitcode.OK {
		return c
	}
	return exitcode.Failed
}

// Skip is the verdict of a scenario never started, for the reason why.
func Skip(why string) Verdict {
	return Verdict{Status: StatusSkipped, Words: NotRun, Reason: why, Code: exitcode.OK}
}

// Words says what status means for a scenario that shows what shows says.
func Words(shows, status string) string {
	flaw := shows == showsFlaw
	switch status {
	case StatusPass:
		if flaw {
			return FlawShown
		}
		return Holds
	case StatusFail:
		if flaw {
			return FlawNotShown
		}
		return DoesNotHold
	case StatusSkipped:
		return NotRun
	}
	return NotMeasured
}
