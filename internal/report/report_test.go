package report

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/score"
)

// TestIncompleteSaysSo checks every human format tells the reader an
// interrupted run's figures are partial.
func TestIncompleteSaysSo(t *testing.T) {
	t.Parallel()
	r := fixture()
	settle(r, true)
	writers := map[string]func(*bytes.Buffer) error{
		"md":       func(b *bytes.Buffer) error { return Markdown(b, r) },
		"html":     func(b *bytes.Buffer) error { return HTML(b, r) },
		"terminal": func(b *bytes.Buffer) error { return Terminal(b, r, false) },
	}
	for name, write := range writers {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "interrupted") {
			t.Errorf("%s does not say the run was interrupted", name)
		}
	}
	var buf bytes.Buffer
	if err := JSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"status": "incomplete"`) {
		t.Error("report.json status is not incomplete")
	}
}

// TestTimelineLimitCountsIdentities: the timeline sums all identities, so
// its limit line must be the per-identity limit times the identities.
func TestTimelineLimitCountsIdentities(t *testing.T) {
	t.Parallel()
	r := fixture()
	r.Scenarios = r.Scenarios[:1]
	r.Scenarios[0].Result.PerIdentity = make([]analysis.IdentityResult, 3)
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	want := "the published limit for all 3 identities scaled to the interval (20/s per identity = 6 per 100ms)"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("timeline caption lacks %q", want)
	}
}

// TestSkippedSaysWhy checks that a scenario skipped up front (its
// deployment lacks what it requires) reads as skipped with its reason in
// every format, JUnit's <skipped> included, and leaves the run passing.
func TestSkippedSaysWhy(t *testing.T) {
	t.Parallel()
	const why = "needs a Redis Cluster: run with --redis spawn-cluster"
	r := &Report{Scenarios: []Scenario{
		{Name: "ok", Thresholds: []score.Threshold{{Expr: "ceiling <= limit", Status: score.StatusPass}}},
		{Name: "cluster-only", Status: score.StatusSkipped, Error: why},
	}}
	settle(r, false)
	if r.Status != score.StatusPass {
		t.Fatalf("status = %s with one scenario skipped, want pass", r.Status)
	}
	writers := map[string]struct {
		write func(*bytes.Buffer) error
		want  string
	}{
		"md":       {func(b *bytes.Buffer) error { return Markdown(b, r) }, "> **Skipped:** " + mdText(why)},
		"html":     {func(b *bytes.Buffer) error { return HTML(b, r) }, `<p class="skipped" id="skipped-cluster-only">Skipped: ` + why + "</p>"},
		"terminal": {func(b *bytes.Buffer) error { return Terminal(b, r, false) }, "Skipped:\n  cluster-only: " + why},
		"junit":    {func(b *bytes.Buffer) error { return JUnit(b, r) }, `<skipped message="` + why + `">`},
	}
	for name, w := range writers {
		var buf bytes.Buffer
		if err := w.write(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), w.want) {
			t.Errorf("%s lacks %q:\n%s", name, w.want, buf.String())
		}
		if name == "terminal" && strings.Contains(buf.String(), "Failed:") {
			t.Errorf("terminal lists a skipped scenario as failed:\n%s", buf.String())
		}
	}
}

// Each writer shows what score decided as score said it: a flaw
// demonstrated in amber, never the green of a design that holds; a
// scenario not run in grey, not red; the default claim marked as one; and
// why a run that measured nothing failed.
func TestWritersShowTheVerdictAsDecided(t *testing.T) {
	t.Parallel()
	r := &Report{Scenarios: []Scenario{
		{Name: "flaw", Shows: "flaw", Thresholds: []score.Threshold{{Expr: "boundary_allowed > limit", Status: score.StatusPass}}},
		{Name: "holds", Shows: "holds", Thresholds: []score.Threshold{{Expr: score.DefaultThreshold, Status: score.StatusPass, Default: true}}},
		{Name: "later", Shows: "holds", Status: score.StatusSkipped, Error: "needs a Redis Cluster"},
	}}
	settle(r, false)
	var html, term, md, junit bytes.Buffer
	for _, w := range []error{HTML(&html, r), Terminal(&term, r, false), Markdown(&md, r), JUnit(&junit, r)} {
		if w != nil {
			t.Fatal(w)
		}
	}
	for _, want := range []string{
		`<span class="status pass flaw">PASS</span> <span class="verdict flaw">flaw demonstrated</span>`,
		`<span class="status pass">PASS</span> <span class="verdict holds">design holds</span>`,
		`<span class="dot skip"></span>later`,
		`<code>ceiling &lt;= limit</code> <span class="default-claim">(the default claim: no thresholds given)</span>`,
	} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
	if !strings.Contains(term.String(), "PASS ceiling <= limit (default)") || !strings.Contains(md.String(), "`ceiling <= limit` (the default claim: no thresholds given)") ||
		!strings.Contains(junit.String(), `name="ceiling &lt;= limit (default claim: no thresholds given)"`) {
		t.Errorf("a writer does not mark the default claim:\n%s\n%s\n%s", term.String(), md.String(), junit.String())
	}

	empty := &Report{}
	settle(empty, false)
	term.Reset()
	if err := Terminal(&term, empty, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(term.String(), "FAIL: 0 scenarios") || !strings.Contains(term.String(), "no scenario to run: nothing was measured") {
		t.Errorf("an empty run: %s", term.String())
	}
}

// The terminal, report.md and report.html say beside the busy scenario's
// error, and only there, that rlctl was too busy and another run may
// measure it; beside the one whose clock was stepped, that the machine
// failed it.
func TestBusyRefusalSaysSoInEveryFormat(t *testing.T) {
	t.Parallel()
	r := busyAndDown()
	settle(r, false)
	for name, write := range map[string]func(io.Writer) error{
		"terminal": func(w io.Writer) error { return Terminal(w, r, false) },
		"markdown": func(w io.Writer) error { return Markdown(w, r) },
		"html":     func(w io.Writer) error { return HTML(w, r) },
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := buf.String()
		if n := strings.Count(out, "rlctl was too busy to measure: run it again when the machine is quieter"); n != 1 {
			t.Errorf("%s says rlctl was too busy %d times, want once (the late scenario):\n%s", name, n, out)
		}
		if n := strings.Count(out, "a stepped clock or a busy machine failed the run, not the design: run it again"); n != 1 {
			t.Errorf("%s says the machine failed a run %d times, want once (the clock scenario):\n%s", name, n, out)
		}
		if !strings.Contains(out, "nothing answered") {
			t.Errorf("%s lost the other scenario's error", name)
		}
	}
}
