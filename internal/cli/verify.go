package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/textfmt"
	"github.com/rlctl/rlctl/internal/traffic"
	"github.com/rlctl/rlctl/internal/verify"
	"github.com/rlctl/rlctl/scenarios"
)

type verifyOptions struct {
	f         *Factory
	Paths     []string
	Run       string
	ReportDir string
	Formats   []string
}

func newCmdVerify(f *Factory, runF func(*verifyOptions) error) *cobra.Command {
	opts := &verifyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "verify [FILE|DIR ...]",
		Short: "Run scenarios and measure what a limiter really allows",
		Long: `Run scenarios: fire bounded, concurrent traffic through many gateways,
record every decision, measure the true ceiling, boundary bursts, races,
failover, fail-open/closed and latency, and check each scenario's thresholds.

With no argument it runs ./scenarios when that directory exists, else the
built-in suite embedded in rlctl (on the embedded Redis: nothing to install).
Reports go to --report-dir/<UTC time>-<suite>/: report.json, report.md,
junit.xml, report.html and the raw histories (for report render/merge).
An interrupted run still writes its report, marked incomplete.

--redis replaces every scenario's redis: (embedded, spawn or a URL). Only the
flag does: RLCTL_REDIS_URL and REDIS_URL, meant for the operating commands,
never redirect a scenario's load.

Each verdict is said in words. A scenario with shows: flaw exists to
demonstrate a flaw, so its PASS reads "flaw demonstrated": the design it ran
is not safe as configured. Otherwise a PASS reads "design holds".
"rlctl help scenarios" documents the file format, "rlctl help metrics" what
each figure means and in what unit.
`,
		Example: `  rlctl verify
  rlctl verify scenarios/ --run 'race|boundary'
  rlctl verify my-gateway.yaml --redis redis://staging:6379 --format json,junit`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			if opts.Run != "" {
				if _, err := regexp.Compile(opts.Run); err != nil {
					return usageError("--run: %v", err)
				}
			}
			for _, fm := range opts.Formats {
				if _, ok := report.Formats[fm]; !ok {
					return usageError("--format %q: want json, md, junit or html", fm)
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return runVerify(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Run, "run", "", "run only scenarios whose name matches this regular expression")
	fl.StringVar(&opts.ReportDir, "report-dir", "reports", "where run reports are written")
	fl.StringSliceVar(&opts.Formats, "format", report.AllFormats, "report formats: json, md, junit, html")
	return cmd
}

// loadSuite resolves what to run: the paths given, else ./scenarios, else
// the embedded suite. It returns the suite's name for the report directory.
func loadSuite(paths []string) ([]*scenario.Scenario, string, error) {
	if len(paths) == 0 {
		if st, err := os.Stat("scenarios"); err == nil && st.IsDir() {
			paths = []string{"scenarios"}
		} else {
			scs, err := scenario.LoadFS(scenarios.FS, ".", verify.Checks)
			if err != nil {
				return nil, "", exitcode.With(err, exitcode.Usage)
			}
			return scs, "builtin", nil
		}
	}
	scs, err := scenario.Load(paths, verify.Checks)
	if err != nil {
		return nil, "", exitcode.With(err, exitcode.Usage)
	}
	name := strings.TrimSuffix(filepath.Base(filepath.Clean(paths[0])), filepath.Ext(paths[0]))
	if len(paths) > 1 {
		name = "suite"
	}
	return scs, name, nil
}

func runVerify(ctx context.Context, opts *verifyOptions) error {
	f := opts.f
	scs, suite, err := loadSuite(opts.Paths)
	if err != nil {
		return err
	}
	if opts.Run != "" {
		re := regexp.MustCompile(opts.Run)
		var keep []*scenario.Scenario
		for _, s := range scs {
			if re.MatchString(s.Name) {
				keep = append(keep, s)
			}
		}
		if len(keep) == 0 {
			return usageError("--run %q matches none of: %s", opts.Run, strings.Join(scenario.Names(scs), ", "))
		}
		scs = keep
	}

	// The run's directory is made (and checked writable) before any
	// traffic, so a run is never made only to be thrown away.
	dir, err := verify.CreateRunDir(opts.ReportDir, f.Now(), suite)
	if err != nil {
		return usageError("--report-dir: %v", err)
	}
	so := verify.SuiteOptions{
		Options: verify.Options{RedisOptions: f.RedisOptions(""), Redis: f.RedisURL},
		Suite:   suite, Dir: dir, Now: f.Now,
		Warn: func(err error) { fmt.Fprintf(f.IO.ErrOut, "rlctl: %v\n", err) },
	}
	var bar *trafficProgress
	so.Start = func(i int, sc *scenario.Scenario) func(traffic.Stats) {
		fmt.Fprint(f.IO.ErrOut, startLine(i, len(scs), sc))
		bar = newTrafficProgress(ctx, f, sc.Name, sc.Traffic.Duration)
		return bar.Update
	}
	so.Done = func(_ int, _ *scenario.Scenario, _ *verify.Outcome, err error) {
		bar.Done()
		if err != nil {
			fmt.Fprintf(f.IO.ErrOut, "  error: %v\n", err)
		}
	}
	rep, code := verify.RunSuite(ctx, scs, so)
	if err := dir.WriteReport(rep, opts.Formats); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if f.JSON() {
		if err := report.JSON(f.IO.Out, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(f.IO.Out)
		if err := report.Terminal(f.IO.Out, rep, f.IO.OutTTY); err != nil {
			return err
		}
	}
	fmt.Fprintln(f.IO.ErrOut, reportLine(dir.Path, opts.Formats))
	switch code {
	case exitcode.OK:
		return nil
	case exitcode.Interrupted:
		return exitcode.With(errors.New("interrupted: the report is marked incomplete"), exitcode.Interrupted)
	}
	return &silentError{code: code}
}

// descriptionWidth is where a scenario's description wraps, below its
// start line.
const descriptionWidth = 96

// startLine announces a scenario: its place in the suite, its name, what it
// shows, and its whole description wrapped and indented (none when empty).
func startLine(i, n int, sc *scenario.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d/%d] %s", i+1, n, sc.Name)
	if sc.Shows == scenario.ShowsFlaw {
		b.WriteString(" (shows a flaw: it passes when the flaw appears)")
	}
	b.WriteByte('\n')
	for _, l := range textfmt.Wrap(sc.Description, descriptionWidth) {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// reportLine names the file to open last: report.html when it was
// written, else the run's directory.
func reportLine(dir string, formats []string) string {
	if slices.Contains(formats, "html") {
		return "report: " + filepath.Join(dir, report.Formats["html"]) + " (open it in a browser; the other reports and the histories are beside it)"
	}
	return "report: " + dir
}
