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
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/rundir"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/textfmt"
	"github.com/rlctl/rlctl/internal/traffic"
	"github.com/rlctl/rlctl/internal/verify"
	"github.com/rlctl/rlctl/internal/workload"
	"github.com/rlctl/rlctl/scenarios"
)

// maxStartAhead bounds --start-at and --start-after: a start further away
// is a mistake (a wrong year, a typo), not a plan, and would wait forever.
const maxStartAhead = 24 * time.Hour

type verifyOptions struct {
	f         *Factory
	Paths     []string
	Run       string
	ReportDir string
	Formats   []string
	// AllowFailover lets failover faults act on the user's own Sentinel
	// or Cluster.
	AllowFailover bool
	// AllowFaults lets redis-stall, redis-reset, redis-down and
	// redis-latency act on an http target's own deployment.
	AllowFaults bool
	// AllowScriptWrites runs a redis-script target's script on a Redis
	// rlctl did not start even when, watched first, it touched more than
	// its KEYS.
	AllowScriptWrites bool
	// Segment, StartAt and StartAfter share one run among machines.
	Segment    workload.Segment
	StartAt    time.Time
	StartAfter time.Duration
	// ClockSkew plays a machine whose clock is off by that much (hidden,
	// for tests of report merge).
	ClockSkew time.Duration
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

--redis replaces every scenario's redis: (embedded, spawn, spawn-sentinel,
spawn-cluster or a URL). On spawn, spawn-sentinel and spawn-cluster the
failover and kill-primary faults are real; on the embedded Redis failover is
an emulation (an empty Redis swapped in). They act on your own Sentinel or
Cluster only with --allow-failover, and kill-primary never does. Only the
flag does: RLCTL_REDIS_URL and REDIS_URL, meant for the operating commands,
never redirect a scenario's load.

A redis-script target on a Redis rlctl did not start (a URL) is run first on
a server rlctl starts (redis-server when installed, watched with MONITOR;
else the embedded Redis), for a few identities past the limit: a script
that writes or deletes a key outside its KEYS, or calls a command on the
whole server (FLUSHALL, FLUSHDB, SELECT, CONFIG, SCRIPT, PUBLISH ...), is
refused before any traffic, exit 2, naming the command and the key.
--allow-script-writes runs it anyway, and the report then says rlctl cannot
vouch for keys outside the run's namespace. A script call that outlives
target.timeout is stopped with SCRIPT KILL once Redis answers BUSY; one
Redis will not kill (it had written) is reported, exit 3.

Each verdict is said in words. A scenario with shows: flaw exists to
demonstrate a flaw, so its PASS reads "flaw demonstrated": the design it ran
is not safe as configured. Otherwise a PASS reads "design holds".
A scenario without thresholds claims its published cap (ceiling <= limit).
A run that did not measure what its scenario claims (nothing answered,
nothing admitted, most of the plan dropped, a boundary never straddled …)
is "not measured", never a pass: "rlctl help verdicts" lists every check.
"rlctl help scenarios" documents the file format, "rlctl help metrics" what
each figure means and in what unit.

One run on several machines (k6's execution segments): --segment i/N makes
this process send its share of every scenario, the i-th of N (from 0), or
--segment from:to a fraction like 0:1/4 or 1/4:2/4 (unlike k6, a bare 1/4
means the second quarter). By default a segment takes a block of whole
identities (race: of each round's fresh identities) with all their
requests, and in the closed model the clients that speak for them, so no
identity's limit is loaded from two machines; a scenario with
traffic.segment: requests shares every identity's requests instead (a
stripe of the plan's requests, and a block of the clients), for a limit
everyone shares. Every segment walks the whole plan's schedule, so the N
segments together send exactly the plan, once; max_requests caps the whole
plan's requests (closed model: each segment gets its block of it).
--start-at TIME (RFC 3339) or --start-after D, at most 24h away, starts the
traffic at that instant on every machine (each later scenario of a suite its
duration plus 5s after the one before). A machine that gets there late starts
at once and says how late, on stderr and in the report; one late by the
whole duration sends nothing and fails the scenario. Each such run reads its
clock against a shared reference at start and end (the target's Redis TIME, from
--redis or target.redis for an http target, else the gateway's
X-RateLimit-Decided-At, else its Date) and keeps the offset in its
histories; "rlctl report merge" of the machines' run directories puts every
history on the reference's time line and widens each request's interval by
the offset's uncertainty, so merged ceilings stay bounds.
deploy/k8s/verify-job.yaml runs this as a Kubernetes Indexed Job.
`,
		Example: `  rlctl verify
  rlctl verify scenarios/ --run 'race|boundary'
  rlctl verify my-gateway.yaml --redis redis://staging:6379 --format json,junit
  rlctl verify load.yaml --segment 0/3 --start-at 2026-12-01T06:00:00Z --report-dir /reports/0`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			if opts.Run != "" {
				if _, err := regexp.Compile(opts.Run); err != nil {
					return usageError("--run: %v", err)
				}
			}
			if opts.StartAfter != 0 {
				if !opts.StartAt.IsZero() {
					return usageError("--start-at and --start-after: give one")
				}
				if opts.StartAfter < 0 {
					return usageError("--start-after %s: want a positive duration", opts.StartAfter)
				}
				opts.StartAt = f.Now().Add(opts.StartAfter)
			}
			if !opts.StartAt.IsZero() && opts.StartAt.Sub(f.Now()) > maxStartAhead {
				given := "--start-at " + opts.StartAt.UTC().Format(time.RFC3339)
				if opts.StartAfter != 0 {
					given = "--start-after " + opts.StartAfter.String()
				}
				return usageError("%s is further from now than the limit of %gh: a shared run starts within a day", given, maxStartAhead.Hours())
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
	fl.BoolVar(&opts.AllowFaults, "allow-faults", false, "let an http target's redis-stall, redis-reset, redis-down and redis-latency faults act on your own deployment (its target.redis, its target.toxiproxy); without it such scenarios are refused")
	fl.BoolVar(&opts.AllowFailover, "allow-failover", false, "let failover faults promote a replica of your own Sentinel or Cluster (--redis redis+sentinel:// or redis+cluster://); without it such scenarios are refused")
	fl.BoolVar(&opts.AllowScriptWrites, "allow-script-writes", false, "run a redis-script target's script on your own Redis even when, watched first on a server rlctl starts, it wrote or deleted keys outside its KEYS or acted on the whole server; the report then says rlctl cannot vouch for keys outside the run's namespace")
	fl.Var(segmentFlag{&opts.Segment}, "segment", "send only this share of every scenario: i/N (the i-th of N, from 0) or from:to like 1/4:2/4")
	fl.Var(startAtFlag{&opts.StartAt}, "start-at", "start the traffic at this RFC 3339 instant (the same on every machine of a shared run)")
	fl.DurationVar(&opts.StartAfter, "start-after", 0, "start the traffic this long from now")
	fl.DurationVar(&opts.ClockSkew, "clock-skew", 0, "tests only: play a machine whose clock is this far ahead")
	_ = fl.MarkHidden("clock-skew")
	return cmd
}

// loadSuite resolves what to run: the paths given, else ./scenarios, else
// the embedded suite. It returns the suite's name for the report directory.
func loadSuite(paths []string) ([]*scenario.Scenario, string, error) {
	if len(paths) == 0 {
		if st, err := os.Stat("scenarios"); err == nil && st.IsDir() {
			paths = []string{"scenarios"}
		} else {
			scs, err := scenario.LoadFS(scenarios.FS, ".")
			if err != nil {
				return nil, "", exitcode.With(err, exitcode.Usage)
			}
			return scs, "builtin", nil
		}
	}
	scs, err := scenario.Load(paths)
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
	dir, err := rundir.CreateRunDir(opts.ReportDir, f.Now(), suite)
	if err != nil {
		return usageError("--report-dir: %v", err)
	}
	vo := verify.Options{RedisOptions: f.RedisOptions(""), Redis: f.RedisURL, Segment: opts.Segment, StartAt: opts.StartAt, AllowFailover: opts.AllowFailover, AllowFaults: opts.AllowFaults,
		AllowScriptWrites: opts.AllowScriptWrites}
	if opts.ClockSkew != 0 {
		skew := opts.ClockSkew
		vo.Now = func() time.Time { return time.Now().Add(skew) }
	}
	so := verify.SuiteOptions{
		Options: vo,
		Suite:   suite, Dir: dir, Now: f.Now,
		Warn: func(err error) { fmt.Fprintf(f.IO.ErrOut, "rlctl: %v\n", err) },
	}
	var bar *trafficProgress
	so.Start = func(i int, sc *scenario.Scenario) func(traffic.Stats) {
		fmt.Fprint(f.IO.ErrOut, startLine(i, len(scs), sc))
		bar = newTrafficProgress(ctx, f, sc.Name, sc.Traffic.Duration)
		return bar.Update
	}
	so.Done = func(_ int, _ *scenario.Scenario, out *verify.Outcome, err error) {
		bar.Done()
		if !opts.StartAt.IsZero() && out.History != nil {
			fmt.Fprintf(f.IO.ErrOut, "  started %v after the common start\n", out.History.Meta.Late.Round(time.Microsecond))
		}
		if err != nil {
			fmt.Fprintf(f.IO.ErrOut, "  error: %v\n", err)
		}
		if out.Report.Status == score.StatusSkipped {
			fmt.Fprintf(f.IO.ErrOut, "  skipped: %s\n", out.Report.Error)
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
	if sc.Shows == design.ShowsFlaw {
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
