package report

import "github.com/rlctl/rlctl/internal/design"

// Flaw reports whether sc demonstrates a flaw rather than proving a design
// holds.
func (sc Scenario) Flaw() bool { return sc.Shows == design.ShowsFlaw }
