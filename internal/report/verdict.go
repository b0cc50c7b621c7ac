package report

import (
	"slices"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/score"
)

// Flaw reports whether sc demonstrates a flaw rather than proving a design
// holds.
func (sc Scenario) Flaw() bool { return sc.Shows == design.ShowsFlaw }

// Busy reports whether sc was not measured because rlctl itself was too
// busy: a validity check it failed is marked busy (score.CheckResult).
func (sc Scenario) Busy() bool { return sc.failed(func(c score.CheckResult) bool { return c.Busy }) }

// Again reports whether sc was not measured because of the machines it ran
// on, not the design or the scenario (rlctl too busy, a clock stepped): a
// validity check it failed is marked again (score.CheckResult).
func (sc Scenario) Again() bool { return sc.failed(func(c score.CheckResult) bool { return c.Again }) }

// failed reports whether a validity check sc failed carries mark.
func (sc Scenario) failed(mark func(score.CheckResult) bool) bool {
	return slices.ContainsFunc(sc.Validity, func(c score.CheckResult) bool { return !c.Held && mark(c) })
}

// AgainNote is what reports put after "Error" for sc: when the machines
// it ran on failed the run (Again), words saying so and that another run
// may; "" otherwise.
func (sc Scenario) AgainNote() string {
	switch {
	case sc.Busy():
		return " (rlctl was too busy to measure: run it again when the machine is quieter)"
	case sc.Again():
		return " (a stepped clock or a busy machine failed the run, not the design: run it again)"
	}
	return ""
}
