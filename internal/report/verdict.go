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
