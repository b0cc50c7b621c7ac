package cli

import (
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/textfmt"
)

// verdictsHelp is `rlctl help verdicts`: what each verdict means, and the
// validity table every run is held to before its thresholds count,
// generated from score.Checks so it cannot drift from what is checked.
func verdictsHelp() string {
	var b strings.Builder
	para := func(s string) { writePara(&b, s) }
	para("One judge decides every verdict, the same in the terminal, report.md, report.html, junit.xml and report.json (its status, verdict and validity fields). A scenario's thresholds count only once the run has measured what the scenario claims; a scenario that names no threshold claims its published cap, " + score.DefaultThreshold + ", and every report says that claim was the default.")
	b.WriteString("Verdicts:\n\n")
	for _, v := range []struct{ status, words, means string }{
		{score.StatusPass, score.Holds, "the design kept every promise the scenario checks (shows: holds)"},
		{score.StatusPass, score.FlawShown, "the run reproduced the flaw the scenario exists to show (shows: flaw): the design is not safe as configured"},
		{score.StatusFail, score.DoesNotHold, "a threshold of a scenario that claims the design holds failed (exit 1)"},
		{score.StatusFail, score.FlawNotShown, "a flaw scenario's thresholds did not all hold: the flaw did not appear (exit 1)"},
		{score.StatusError, score.NotMeasured, "the run did not measure what the scenario claims (a check below failed), or could not run: its reason says which, with that check's exit code"},
		{score.StatusSkipped, score.NotRun, "never started: the deployment lacks what it requires, or the run was interrupted first; it does not fail the run unless every scenario was skipped (exit 2)"},
	} {
		fmt.Fprintf(&b, "  %s · %s\n", strings.ToUpper(v.status), v.words)
		for _, l := range textfmt.Wrap(v.means, helpWidth-6) {
			b.WriteString("      " + l + "\n")
		}
	}
	b.WriteString("\n")
	para("A run passes only when at least one scenario ran and every one that ran passed; a run with no scenario, or whose every scenario was skipped, fails with exit 2. Its exit code is the worst its scenarios call for.")
	para("What a run must have measured before its thresholds count, in the order it is checked (the first check a run fails gives its reason and exit code; report.json's validity lists each check that applied, and marks busy one failed by rlctl's own slowness rather than the target's: its CPU or scheduling, the embedded Redis inside it included; such a scenario may measure on a quieter machine; and marks again one the machines failed, busy or with a clock stepped, which may measure when run again):")
	for _, c := range score.Checks {
		effect := fmt.Sprintf("exit %d when it fails", c.Code)
		if c.NoteOnly {
			effect = "a note when it fails; the verdict stands"
		}
		fmt.Fprintf(&b, "  %s  (%s)\n", c.Name, effect)
		for _, l := range textfmt.Wrap(c.Needs, helpWidth-6) {
			b.WriteString("      " + l + "\n")
		}
	}
	return b.String()
}
