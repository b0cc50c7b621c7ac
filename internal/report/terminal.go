package report

import (
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

const (
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiBold  = "\x1b[1m"
	ansiReset = "\x1b[0m"
)

// Terminal writes the final table of a run: per scenario the published
// limit, the measured ceiling (with its upper bound), the ratio, the key
// metrics and PASS/FAIL per threshold; then every failed threshold with its
// observed value. color adds ANSI colours (only on a terminal).
func Terminal(w io.Writer, r *Report, color bool) error {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	status := func(s string) string {
		switch s {
		case StatusPass:
			return paint(ansiGreen, "PASS")
		case StatusFail, StatusError:
			return paint(ansiRed, upper(s))
		}
		return upper(s)
	}
	// Auto-format would turn "p99" into "P 99"; the headers are written
	// as they should read.
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("SCENARIO", "LIMIT", "CEILING", "RATIO", "ERRORS", "BURST", "RACE EXCESS", "BOUNDARY", "P99", "RESULT")
	for _, sc := range r.Scenarios {
		res := status(sc.Status)
		for _, th := range sc.Thresholds {
			res += "\n" + status(th.Status) + " " + th.Expr
		}
		if err := t.Append([]string{
			sc.Name, sc.Limit.String(), ceilingCell(sc.Metrics), ratioCell(sc.Metrics), errorsCell(sc.Metrics),
			metric(sc.Metrics, keyMetrics[0]), metric(sc.Metrics, keyMetrics[1]),
			metric(sc.Metrics, keyMetrics[2]), metric(sc.Metrics, keyMetrics[3]), res,
		}); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	var failed []string
	for _, sc := range r.Scenarios {
		if sc.Status == StatusSkipped {
			failed = append(failed, fmt.Sprintf("  %s: skipped: %s", sc.Name, sc.Error))
			continue
		}
		if sc.Error != "" {
			// Its thresholds were never checked; the error says why.
			failed = append(failed, fmt.Sprintf("  %s: error: %s", sc.Name, sc.Error))
			continue
		}
		for _, th := range sc.Thresholds {
			switch {
			case th.Error != "":
				failed = append(failed, fmt.Sprintf("  %s: %s: %s", sc.Name, th.Expr, th.Error))
			case th.Status != StatusPass:
				failed = append(failed, fmt.Sprintf("  %s: %s (observed %s)", sc.Name, th.Expr, observedCell(th)))
			}
		}
	}
	if len(failed) > 0 {
		if _, err := fmt.Fprintln(w, paint(ansiBold, "Failed:")); err != nil {
			return err
		}
		for _, f := range failed {
			if _, err := fmt.Fprintln(w, f); err != nil {
				return err
			}
		}
	}
	if r.Status == StatusIncomplete {
		if _, err := fmt.Fprintln(w, "The run was interrupted; the figures cover only what ran."); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s: %d scenarios in %s\n", status(r.Status), len(r.Scenarios), durationMs(r.DurationMs))
	return err
}
