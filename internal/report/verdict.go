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

// BusyNote is what reports put after "Error" for sc: when rlctl itself was
// too busy to measure it, words saying so and that another run may; ""
// otherwise.
func (sc Scenario) BusyNote() string {
	if sc.Busy() {
		return " (rlctl was too busy to measure: run it again when the machine is quieter)"
	}
	return ""
}
