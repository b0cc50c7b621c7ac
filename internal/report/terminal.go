package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/textfmt"
)

const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

// Terminal writes the final table of a run: per scenario its design, the
// published limit, the measured ceiling (with its upper bound), the ratio,
// the errors, p99 and the verdict in words ("PASS · flaw demonstrated"),
// then each threshold with what it observed and the bound it held that
// to; then every failed threshold and erred scenario, and a last line with
// the verdicts counted. color adds ANSI colours (only on a terminal).
func Terminal(w io.Writer, r *Report, color bool) error {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	status := func(s string) string {
		switch s {
		case score.StatusPass:
			return paint(ansiGreen, "PASS")
		case score.StatusFail, score.StatusError:
			return paint(ansiRed, upper(s))
		}
		return upper(s)
	}
	verdict := func(sc Scenario) string {
		v := sc.Verdict
		switch v {
		case score.Holds:
			v = paint(ansiGreen, v)
		case score.FlawShown:
			v = paint(ansiYellow, v)
		}
		return status(sc.Status) + " · " + v
	}
	// Auto-format would turn "p99" into "P 99"; the headers are written
	// as they should read.
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithRendition(tw.Rendition{Settings: tw.Settings{Separators: tw.Separators{BetweenRows: tw.On}}}))
	t.Header("SCENARIO / DESIGN", "LIMIT", "CEILING", "RATIO", "ERRORS", "P99", "RESULT")
	for _, sc := range r.Scenarios {
		name := sc.Name
		for _, d := range []string{sc.Design.Label(), sc.Design.ClockLabel()} {
			if d != "" {
				name += "\n" + d
			}
		}
		res := verdict(sc)
		for _, th := range sc.Thresholds {
			res += "\n  " + status(th.Status) + " " + th.Expr
			if th.Default {
				res += " (default)"
			}
			switch {
			case th.Error != "":
				res += ": not measured"
			case th.Observed == nil:
			case th.BoundWritten || th.Bound == nil:
				res += ": " + observedCell(th)
			default:
				res += ": " + observedCell(th) + " (bound " + boundCell(th) + ")"
			}
		}
		if err := t.Append([]string{
			name, sc.Limit.String(), ceilingCell(sc.Metrics), ratioCell(sc.Metrics), errorsCell(sc.Metrics),
			metricCell(sc.Metrics, keyMetrics[3]), res,
		}); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	var failed, skipped []string
	flaws := false
	for _, sc := range r.Scenarios {
		flaws = flaws || sc.Flaw()
		if sc.Status == score.StatusSkipped {
			skipped = append(skipped, fmt.Sprintf("  %s: %s", sc.Name, sc.Error))
			continue
		}
		if sc.Error != "" {
			// Its thresholds were never checked; the error says why.
			failed = append(failed, fmt.Sprintf("  %s: error%s: %s", sc.Name, sc.AgainNote(), sc.Error))
			continue
		}
		for _, th := range sc.Thresholds {
			switch {
			case th.Error != "":
				failed = append(failed, fmt.Sprintf("  %s: %s: %s", sc.Name, th.Expr, th.Error))
			case th.Status != score.StatusPass:
				failed = append(failed, fmt.Sprintf("  %s: %s (%s)", sc.Name, th.Expr, figures(th)))
			}
		}
	}
	lines := []string{}
	if len(failed) > 0 {
		lines = append(lines, paint(ansiBold, "Failed:"))
		lines = append(lines, failed...)
	}
	if len(skipped) > 0 {
		lines = append(lines, paint(ansiBold, "Skipped:"))
		lines = append(lines, skipped...)
	}
	if flaws {
		lines = append(lines, textfmt.Wrap(`"flaw demonstrated": the scenario exists to show a flaw (shows: flaw), and its PASS means the run reproduced it: the design it ran is not safe as configured.`, 100)...)
	}
	if r.Status == score.StatusIncomplete {
		lines = append(lines, "The run was interrupted; the figures cover only what ran.")
	}
	if slices.ContainsFunc(r.Scenarios, func(sc Scenario) bool { return len(sc.Thresholds) > 0 && sc.Thresholds[0].Default }) {
		lines = append(lines, textfmt.Wrap(`"(default)": the scenario names no threshold, so its claim is its published cap, ceiling <= limit.`, 100)...)
	}
	if r.Reason != "" {
		lines = append(lines, r.Reason)
	}
	last := fmt.Sprintf("%s: %s in %s", status(r.Status), count(len(r.Scenarios), "scenario"), durationMs(r.DurationMs))
	if c := r.Verdicts; len(c) > 0 {
		last += ": " + strings.Join(c, ", ")
	}
	lines = append(lines, last)
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}
