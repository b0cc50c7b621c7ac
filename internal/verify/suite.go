package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/rundir"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/traffic"
)

// SuiteOptions are what RunSuite adds around each scenario.
type SuiteOptions struct {
	Options
	// Suite names the suite, for the report's title.
	Suite string
	// Dir, when set, receives every scenario's history as it finishes.
	Dir *rundir.RunDir
	// Now is the clock of the report's start and duration (default
	// time.Now).
	Now func() time.Time
	// Start, when set, is called before each scenario; the function it
	// returns hears the scenario's live traffic statistics.
	Start func(i int, sc *scenario.Scenario) func(traffic.Stats)
	// Done, when set, is called after each scenario that ran, with the
	// error Run returned (nil when it was measured).
	Done func(i int, sc *scenario.Scenario, out *Outcome, err error)
	// Warn hears problems that do not stop the run (a history that could
	// not be saved).
	Warn func(error)
}

// SuiteGap is the time a suite with a common start (Options.StartAt)
// leaves between one scenario's planned end and the next one's start: for
// the grace of in-flight requests, the analysis and the next scenario's
// setup, so every machine can start the next scenario at the same instant.
const SuiteGap = 5 * time.Second

// startOf is when scenario i of a suite with a common start begins: the
// suite's start, then each scenario's duration and SuiteGap after the one
// before.
func startOf(at time.Time, scs []*scenario.Scenario, i int) time.Time {
	for _, sc := range scs[:i] {
		at = at.Add(sc.Traffic.Duration + SuiteGap)
	}
	return at
}

// RunSuite runs scenarios one after another and returns the finished
// report and the exit code the run calls for: the worst of its scenarios'
// (OK only when every one passed), Interrupted when ctx was cancelled. A
// scenario cut by the cancellation is an error and those never started are
// skipped, each saying so.
func RunSuite(ctx context.Context, scs []*scenario.Scenario, o SuiteOptions) (*report.Report, exitcode.Code) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	started := now()
	rep := &report.Report{Started: started.UTC(), Suite: o.Suite}
	interrupted := false
	for i, sc := range scs {
		if ctx.Err() != nil {
			interrupted = true
			r := rundir.ReportOf(sc)
			r.Decide(score.Skip("not run: the run was interrupted before it started"))
			rep.Scenarios = append(rep.Scenarios, r)
			continue
		}
		vo := o.Options
		if !vo.StartAt.IsZero() {
			vo.StartAt = startOf(o.StartAt, scs, i)
		}
		if o.Start != nil {
			vo.Progress = o.Start(i, sc)
		}
		out, err := Run(ctx, sc, vo)
		if out.Interrupted || (err != nil && ctx.Err() != nil) {
			interrupted = true
		}
		if out.History != nil && o.Dir != nil {
			if werr := o.Dir.SaveHistory(out.History, out.Saved); werr != nil && o.Warn != nil {
				o.Warn(fmt.Errorf("%s: %w", sc.Name, werr))
			}
		}
		if o.Done != nil {
			o.Done(i, sc, out, err)
		}
		if out.History != nil {
			// A long run's history spilled to disk: saved, it goes.
			if cerr := out.History.Close(); cerr != nil && o.Warn != nil {
				o.Warn(fmt.Errorf("%s: %w", sc.Name, cerr))
			}
		}
		rep.Scenarios = append(rep.Scenarios, out.Report)
	}
	rep.DurationMs = now().Sub(started).Milliseconds()
	return rep, rundir.Summarize(rep, interrupted)
}
