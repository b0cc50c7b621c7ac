package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/score"
)

// Markdown writes report.md: a summary table of every scenario, then a
// section per scenario with its description, target, metrics, thresholds
// with observed values, and notes.
func Markdown(w io.Writer, r *Report) error {
	b := bufio.NewWriter(w)
	title := "rlctl verify report"
	if r.Suite != "" {
		title += ": " + r.Suite
	}
	fmt.Fprintf(b, "# %s\n\n", mdText(title))
	fmt.Fprintf(b, "**%s** · %s", upper(r.Status), count(len(r.Scenarios), "scenario"))
	if c := r.Verdicts; len(c) > 0 {
		fmt.Fprintf(b, ": %s", strings.Join(c, ", "))
	}
	fmt.Fprintf(b, " · started %s · took %s\n\n", r.Started.UTC().Format(time.RFC3339), durationMs(r.DurationMs))
	if r.Reason != "" {
		fmt.Fprintf(b, "> **%s**\n\n", mdText(r.Reason))
	}

	if r.Status == score.StatusIncomplete {
		fmt.Fprintf(b, "> **Incomplete:** the run was interrupted; the figures cover only what ran.\n\n")
	}
	fmt.Fprintln(b, "| scenario | design | result | limit | ceiling | ratio | errors | burst | race excess | boundary | p99 | thresholds |")
	fmt.Fprintln(b, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	flaws := false
	for _, sc := range r.Scenarios {
		flaws = flaws || sc.Flaw()
		p, n := thresholdCounts(sc)
		fmt.Fprintf(b, "| [%s](#%s) | %s | %s · %s | %s | %s | %s | %s | %s | %s | %s | %s | %d/%d |\n",
			mdCell(sc.Name), anchor(sc.Name), mdCell(sc.Design.LongLabel()), upper(sc.Status), sc.Verdict,
			sc.Limit, ceilingCell(sc.Metrics), ratioCell(sc.Metrics), errorsCell(sc.Metrics),
			metricCell(sc.Metrics, keyMetrics[0]), metricCell(sc.Metrics, keyMetrics[1]),
			metricCell(sc.Metrics, keyMetrics[2]), metricCell(sc.Metrics, keyMetrics[3]), p, n)
	}
	fmt.Fprintln(b)
	if flaws {
		fmt.Fprintln(b, "*flaw demonstrated*: the scenario exists to show a flaw (`shows: flaw`), and its PASS means the run reproduced it: the design it ran is not safe as configured. *design holds*: the design kept every promise the scenario checks.")
		fmt.Fprintln(b)
	}

	fmt.Fprintln(b, "## Four questions before trusting a limiter")
	fmt.Fprintln(b)
	for _, q := range Questions(r) {
		fmt.Fprintf(b, "**%s** %s\n\n", mdText(q.Ask), mdText(q.Answer))
		for _, e := range q.Evidence {
			fmt.Fprintf(b, "- [%s](#%s): %s\n", mdText(e.Scenario), anchor(e.Scenario), mdText(e.Text))
		}
		if q.More > 0 {
			fmt.Fprintf(b, "- and %d more in the table above\n", q.More)
		}
		if len(q.Evidence) > 0 {
			fmt.Fprintln(b)
		}
	}

	for _, sc := range r.Scenarios {
		fmt.Fprintf(b, "## %s\n\n", mdText(sc.Name))
		fmt.Fprintf(b, "**%s · %s**", upper(sc.Status), sc.Verdict)
		if d := sc.Design.LongLabel(); d != "" {
			fmt.Fprintf(b, " · design: %s", mdText(d))
		}
		if sc.Target != "" {
			fmt.Fprintf(b, " · target: %s", mdText(sc.Target))
		}
		fmt.Fprintf(b, " · published limit: %s per identity\n\n", sc.Limit)
		if sc.Description != "" {
			fmt.Fprintf(b, "%s\n\n", mdText(sc.Description))
		}
		switch {
		case sc.Status == score.StatusSkipped:
			fmt.Fprintf(b, "> **Skipped:** %s\n\n", mdText(sc.Error))
		case sc.Error != "":
			fmt.Fprintf(b, "> **Error%s:** %s\n\n", mdText(sc.AgainNote()), mdText(sc.Error))
		}
		if len(sc.Faults) > 0 {
			// Unplanned outages are in the notes, with what failed.
			var parts []string
			for _, f := range sc.Faults {
				parts = append(parts, f.Describe())
			}
			fmt.Fprintf(b, "Faults: %s\n\n", mdText(strings.Join(parts, "; ")))
		}
		if len(sc.Thresholds) > 0 {
			fmt.Fprintln(b, "| threshold | status | observed | bound |")
			fmt.Fprintln(b, "|---|---|---:|---:|")
			for _, t := range sc.Thresholds {
				obs := observedCell(t)
				if t.Error != "" {
					obs = mdCell(t.Error)
				}
				bnd := boundCell(t)
				if bnd == "" {
					bnd = "–"
				}
				expr := "`" + mdCode(t.Expr) + "`"
				if t.Default {
					expr += " (the default claim: no thresholds given)"
				}
				fmt.Fprintf(b, "| %s | %s | %s | %s |\n", expr, upper(t.Status), obs, bnd)
			}
			fmt.Fprintln(b)
		}
		if len(sc.Notes) > 0 {
			fmt.Fprintln(b, "Notes:")
			fmt.Fprintln(b)
			for _, n := range sc.Notes {
				fmt.Fprintf(b, "- %s\n", mdText(n))
			}
			fmt.Fprintln(b)
		}
		if f := sc.Failover; f != nil {
			fmt.Fprintf(b, "| part | %s |\n", strings.Join(FailoverColumns, " | "))
			fmt.Fprintf(b, "|---|%s\n", strings.Repeat("---:|", len(FailoverColumns)))
			for _, row := range f.rows() {
				fmt.Fprintf(b, "| %s |", mdCell(row.label))
				for _, c := range FailoverColumns {
					fmt.Fprintf(b, " %s |", metricCell(row.metrics, c))
				}
				fmt.Fprintln(b)
			}
			fmt.Fprintln(b)
			if more := f.MoreIdentities(); more > 0 {
				fmt.Fprintf(b, "The identities shown are the %d worst; report.json lists %s more.\n\n", failoverTableIdentities, count(more, "identity"))
			}
		}
		if names := orderedMetrics(sc.Metrics); len(names) > 0 {
			fmt.Fprintln(b, "| metric | value |")
			fmt.Fprintln(b, "|---|---:|")
			for _, n := range names {
				fmt.Fprintf(b, "| %s | %s |\n", n, metricCell(sc.Metrics, n))
			}
			fmt.Fprintln(b)
		}
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	return nil
}

// mdText keeps user text from turning into Markdown or HTML structure.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "|", `\|`, "#", `\#`, "\n", " ", "\r", " ",
)

func mdText(s string) string { return mdEscaper.Replace(s) }

func mdCell(s string) string { return mdText(s) }

// mdCode keeps a backtick or pipe inside inline code from ending it.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", `\|`, "\n", " ").Replace(s)
}

// anchor is the heading id GitHub gives "## name".
func anchor(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		case c == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// shardLabel names a shard's row of a failover table: "shard 127.0.0.1:7001
// (3 identities, failed over)".
func shardLabel(p FailoverPart) string {
	s := fmt.Sprintf("shard %s (%s", p.Name, count(p.Identities, "identity"))
	if p.FailedOver {
		s += ", failed over"
	}
	return s + ")"
}
