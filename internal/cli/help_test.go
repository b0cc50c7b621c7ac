package cli

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/textfmt"
	"github.com/rlctl/rlctl/internal/threshold"
)

func helpTopic(t *testing.T, topic string) string {
	t.Helper()
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	if code := Run(f, []string{"help", topic}, nil, noExit(t)); code != 0 {
		t.Fatalf("rlctl help %s exited %d: %s", topic, code, errOut)
	}
	return out.String()
}

// entry is the text help gives one name: its heading line and the lines
// indented under it.
func entry(t *testing.T, help, name string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?: \(threshold: [a-z0-9_]+\))?  [^\n]*\n(?:    [^\n]*\n)*`)
	e := re.FindString(help)
	if e == "" {
		t.Errorf("help has no entry for %s", name)
	}
	return e
}

// words is s's words as help wraps them, for a containment check.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestHelpMetricsCoversEveryMetric: every metric a threshold may use
// appears in `rlctl help metrics` with its unit, its description and, for
// latencies, the name thresholds use.
func TestHelpMetricsCoversEveryMetric(t *testing.T) {
	help := helpTopic(t, "metrics")
	for _, n := range metric.Names {
		e := entry(t, help, n)
		d := metric.Descriptions[n]
		if !strings.Contains(e, "["+d.Unit+"]") || !strings.Contains(words(e), words(d.Text)) {
			t.Errorf("%s: entry lacks its unit %q or description:\n%s", n, d.Unit, e)
		}
		if alias := threshold.Alias(n); alias != n && !strings.Contains(e, "(threshold: "+alias+")") {
			t.Errorf("%s: entry does not name its threshold alias %s", n, alias)
		}
	}
	for _, name := range threshold.Names() {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(help) {
			t.Errorf("threshold name %s does not appear in rlctl help metrics", name)
		}
	}
	// What a newcomer asked: burst, in what unit?
	if e := entry(t, help, "burst"); !strings.Contains(e, "[requests]") {
		t.Errorf("burst has no unit:\n%s", e)
	}
	if e := entry(t, help, "retry_after_missing"); !strings.Contains(e, "share (0 to 1)") {
		t.Errorf("retry_after_missing does not say it is a share:\n%s", e)
	}
}

// TestHelpScenariosCoversEveryField: every field the scenario decoder
// accepts appears in `rlctl help scenarios` with its documentation and,
// for enumerations, every value with what it does.
func TestHelpScenariosCoversEveryField(t *testing.T) {
	help := helpTopic(t, "scenarios")
	fields := scenario.Fields()
	if len(fields) < 50 {
		t.Fatalf("scenario.Fields lists %d fields; the decoder accepts more", len(fields))
	}
	for _, f := range fields {
		e := entry(t, help, f.Path)
		if f.Doc == "" || !strings.Contains(words(e), words(f.Doc)) {
			t.Errorf("%s: no description in help:\n%s", f.Path, e)
		}
		for _, v := range f.Values {
			if !regexp.MustCompile(`(?m)^      ` + regexp.QuoteMeta(v) + ` +` + regexp.QuoteMeta(textfmt.Wrap(f.ValueDocs[v], 20)[0])).MatchString(e) {
				t.Errorf("%s: value %s is not listed with what it does:\n%s", f.Path, v, e)
			}
		}
	}
	// What a newcomer asked: how do I write a failover fault, and what
	// does on_error: local do?
	if !strings.Contains(help, "{at: 1s, action: failover}") {
		t.Error("no failover fault example")
	}
	if e := entry(t, help, "target.endpoints[].on_error"); !strings.Contains(words(e), "local fall back to a smaller per-gateway allowance") {
		t.Errorf("on_error: local is not explained:\n%s", e)
	}
}

// The examples in the help load as scenarios: a newcomer can copy them.
func TestHelpExamplesLoad(t *testing.T) {
	if _, err := scenario.Parse([]byte(exampleScenario), "example.yaml"); err != nil {
		t.Errorf("the example scenario does not load: %v", err)
	}
	base := "name: x\nlimit: 20/1s\ntraffic: {rate: 100/s, duration: 4s}\n"
	if _, err := scenario.Parse([]byte(base+"target: {algorithm: redis-fixed-window, gateways: 2}\n"+exampleFaults), "faults.yaml"); err != nil {
		t.Errorf("the fault examples do not load: %v", err)
	}
	if _, err := scenario.Parse([]byte(base+strings.Replace(exampleLocalFallback, "target:\n", "target:\n  algorithm: redis-fixed-window\n", 1)), "local.yaml"); err != nil {
		t.Errorf("the on_error: local example does not load: %v", err)
	}
}

// `rlctl help verdicts` is the validity table: every check, what it
// needs and its exit code, and every verdict's words.
func TestHelpVerdictsIsTheValidityTable(t *testing.T) {
	help := helpTopic(t, "verdicts")
	for _, c := range score.Checks {
		e := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(c.Name) + `  \(([^)]*)\)\n((?:      [^\n]*\n)*)`).FindStringSubmatch(help)
		if e == nil {
			t.Errorf("no entry for check %s", c.Name)
			continue
		}
		effect := fmt.Sprintf("exit %d when it fails", c.Code)
		if c.NoteOnly {
			effect = "a note when it fails; the verdict stands"
		}
		if e[1] != effect || words(e[2]) != words(c.Needs) {
			t.Errorf("check %s: %q %q", c.Name, e[1], e[2])
		}
	}
	for _, w := range []string{score.Holds, score.FlawShown, score.DoesNotHold, score.FlawNotShown, score.NotMeasured, score.NotRun, score.DefaultThreshold} {
		if !strings.Contains(help, w) {
			t.Errorf("rlctl help verdicts does not say %q", w)
		}
	}
}

// Help topics are listed by rlctl --help and carry no exit codes.
func TestHelpTopicsListed(t *testing.T) {
	out := &syncBuffer{}
	f, _ := testFactory(out, nil)
	Run(f, []string{"--help"}, nil, noExit(t))
	for _, topic := range []string{"scenarios", "metrics", "verdicts"} {
		if !strings.Contains(out.String(), "rlctl "+topic+" ") {
			t.Errorf("rlctl --help does not list the help topic %s", topic)
		}
		if strings.Contains(helpTopic(t, topic), "Exit status:") {
			t.Errorf("help topic %s carries exit codes", topic)
		}
	}
}

// A topic's text is not written when the command tree is built (every
// rlctl command builds it), only when it is shown, and it is the same
// however it is asked for: `rlctl help metrics`, `rlctl metrics` and
// `rlctl metrics --help`.
func TestHelpTopicTextOnEveryPath(t *testing.T) {
	f, _ := testFactory(&syncBuffer{}, nil)
	for _, c := range NewRootCmd(f).Commands() {
		if c.Annotations[helpTopicAnnotation] != "" && c.Long != "" {
			t.Errorf("building the tree wrote topic %s's text (%d bytes)", c.Name(), len(c.Long))
		}
	}
	for _, topic := range []string{"scenarios", "metrics", "verdicts"} {
		want := helpTopic(t, topic)
		if !strings.Contains(want, "\n") || len(want) < 500 {
			t.Fatalf("rlctl help %s printed %d bytes: %q", topic, len(want), want)
		}
		for _, args := range [][]string{{topic}, {topic, "--help"}} {
			out := &syncBuffer{}
			f, errOut := testFactory(out, nil)
			if code := Run(f, args, nil, noExit(t)); code != 0 {
				t.Fatalf("rlctl %s exited %d: %s", strings.Join(args, " "), code, errOut)
			}
			if out.String() != want {
				t.Errorf("rlctl %s printed other text than rlctl help %s:\n%s", strings.Join(args, " "), topic, out.String())
			}
		}
	}
}
