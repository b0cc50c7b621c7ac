package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/textfmt"
	"github.com/rlctl/rlctl/internal/threshold"
)

// helpTopicAnnotation marks a help topic: a command that only carries text
// (`rlctl help scenarios`), so it gets no exit-code section.
const helpTopicAnnotation = "rlctl/help-topic"

// helpWidth is where help topics wrap their descriptions.
const helpWidth = 78

// newHelpTopics returns the help topics: the scenario file format and the
// metrics, both generated from the tables the code validates with
// (scenario.Fields, metric.Names and metric.Descriptions), so they
// cannot drift from what rlctl accepts.
func newHelpTopics() []*cobra.Command {
	return []*cobra.Command{
		newHelpTopic("scenarios", "The scenario file format: every field, its values and defaults, with examples", scenariosHelp),
		newHelpTopic("metrics", "What each measured figure means, in what unit, and how thresholds name it", metricsHelp),
		newHelpTopic("verdicts", "What each verdict means, and what a run must have measured before its thresholds count", verdictsHelp),
	}
}

// newHelpTopic returns a topic whose text is written only when its help is
// shown: every rlctl command builds the whole command tree, and wrapping
// the topics' text was most of that work.
func newHelpTopic(use, short string, long func() string) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Annotations: map[string]string{helpTopicAnnotation: "true"}}
	c.SetHelpFunc(func(c *cobra.Command, args []string) {
		c.Long = long()
		c.Parent().HelpFunc()(c, args)
	})
	return c
}

// exampleScenario is a complete scenario, shown in `rlctl help scenarios`
// (a test checks it loads).
const exampleScenario = `name: lua-fixed-window-holds          # unique in a suite
shows: holds                          # holds (default) or flaw
description: One Lua script decides atomically, so the published cap holds.
limit: 20/1s                          # the published limit, per identity
target:
  kind: simulated
  algorithm: redis-fixed-window
  gateways: 10
  redis: embedded                     # or spawn, or redis://host:6379
  timeout: 50ms
  endpoints:
    - {name: login, share: 0.2, on_error: closed, on_failover: deny}
    - {name: feed, share: 0.8, on_error: open}
traffic:
  pattern: constant
  rate: 400/s                         # all identities together
  duration: 5s
  identities: 4
faults:
  - {at: 2s, for: 1s, action: redis-down}
thresholds:                           # all must hold for a pass
  - fail_closed > 0                   # login refused while Redis was down
  - p99 < 100ms                       # and no decision waited on it
`

// exampleFaults shows one fault of each action (a test checks they load).
const exampleFaults = `faults:
  - {at: 1s, action: failover}                          # a replica that had not caught up takes over
  - {at: 1s, for: 1s, action: redis-down}               # Redis answers nothing for 1s
  - {at: 2s, for: 500ms, action: redis-latency, latency: 90ms}
  - {at: 3s, action: redis-reset}                       # the limiter's keys vanish
  - {at: 1s, for: 2s, action: gateway-down, gateway: 0} # the first gateway stops for 2s, then restarts
`

// exampleLocalFallback shows on_error: local (a test checks it loads).
const exampleLocalFallback = `target:
  endpoints:
    - {name: login, share: 1, on_error: local, local: 5/1s}
`

// writePara writes s wrapped at helpWidth, then a blank line.
func writePara(b *strings.Builder, s string) {
	for _, l := range textfmt.Wrap(s, helpWidth) {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n")
}

func scenariosHelp() string {
	var b strings.Builder
	para := func(s string) { writePara(&b, s) }
	block := func(s string) {
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			b.WriteString("  " + l + "\n")
		}
		b.WriteString("\n")
	}
	para("A scenario file is YAML: one scenario per document (--- between them). It names a published limit, a target (simulated gateways running one of the designs, your HTTP gateways, or your own Lua script), the traffic, faults and thresholds. Decoding is strict: an unknown field, a wrong type or a bad value is an error naming the file, the line and the field.")
	b.WriteString("Example:\n\n")
	block(exampleScenario)
	b.WriteString("Fields (a path like target.endpoints[].on_error is a field of each item of\ntarget.endpoints):\n\n")
	for _, f := range scenario.Fields() {
		typ := f.Type
		if f.Type == scenario.TypeEnum {
			typ = strings.Join(f.Values, " | ")
			if len(f.Path)+len(typ) > helpWidth-4 {
				typ = "one of the values below"
			}
		}
		fmt.Fprintf(&b, "%s  (%s)\n", f.Path, typ)
		for _, l := range textfmt.Wrap(f.Doc, helpWidth-4) {
			b.WriteString("    " + l + "\n")
		}
		width := 0
		for _, v := range f.Values {
			if f.ValueDocs[v] != "" {
				width = max(width, len(v))
			}
		}
		for _, v := range f.Values {
			d := f.ValueDocs[v]
			if d == "" {
				continue
			}
			for i, l := range textfmt.Wrap(d, helpWidth-8-width) {
				lead := ""
				if i == 0 {
					lead = v
				}
				fmt.Fprintf(&b, "      %-*s  %s\n", width, lead, l)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("Faults, one of each action (they act on the Redis the simulated gateways use):\n\n")
	block(exampleFaults)
	b.WriteString("A smaller local allowance while Redis fails (on_error: local):\n\n")
	block(exampleLocalFallback)
	para("Thresholds read the metrics of `rlctl help metrics`. `rlctl verify FILE` runs a scenario; a file that does not load is exit 2, naming what is wrong.")
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func metricsHelp() string {
	var b strings.Builder
	for _, l := range textfmt.Wrap("What a run measures, from the record of every request. Limits are per identity, so figures are per identity too: a scenario's figure is the worst identity's (ceiling, ceiling_upper, ceiling_ratio, burst, sustained_rate, boundary_allowed, boundary_allowed_upper, after_fault_ceiling, after_fault_ceiling_upper) or the total over identities (the counts). L is the published count and W the published window. A metric that does not apply to a run is absent from report.json, not 0, and a threshold on it fails. Thresholds name latencies by their short name (p99) and compare them with durations: p99 < 5ms.", helpWidth) {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n")
	for _, n := range metric.Names {
		d := metric.Descriptions[n]
		head := n
		if alias := threshold.Alias(n); alias != n {
			head += " (threshold: " + alias + ")"
		}
		fmt.Fprintf(&b, "%s  [%s]\n", head, d.Unit)
		for _, l := range textfmt.Wrap(d.Text, helpWidth-4) {
			b.WriteString("    " + l + "\n")
		}
		b.WriteString("\n")
	}
	for _, l := range textfmt.Wrap("See `rlctl help scenarios` for how thresholds are written.", helpWidth) {
		b.WriteString(l + "\n")
	}
	return b.String()
}
