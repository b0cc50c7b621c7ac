package report

import "github.com/rlctl/rlctl/internal/design"

// Flaw reports whether sc demonstrates a flaw rather than proving a design
// holds.
func (sc Scenario) Flaw() bool { return sc.Shows == design.ShowsFlaw }

// Busy reports whether sc was not measured because rlctl itself was too
// busy: a validity check it failed is marked busy (score.CheckResult).
func (sc Scenario) Busy() bool {
	for _, c := range sc.Validity {
		if !c.Held && c.Busy {
			return true
		}
	}
	return false
}

// Again reports whether sc was not measured because of the machines it ran
// on, not the design or the scenario (rlctl too busy, a clock stepped): a
// validity check it failed is marked again (score.CheckResult).
func (sc Scenario) Again() bool {
	for _, c := range sc.Validity {
		if !c.Held && c.Again {
			return true
		}
	}
	return false
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
