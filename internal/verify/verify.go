package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/rundir"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/target"
	"github.com/rlctl/rlctl/internal/traffic"
	"github.com/rlctl/rlctl/internal/workload"
)

// Options are what the caller adds around a scenario.
type Options struct {
	// Redis, when set, replaces every scenario's target.redis (--redis).
	Redis string
	// RedisOptions carry TLS settings, the timeout and the environment for
	// URL targets.
	RedisOptions redisconn.Options
	// Progress is called with live traffic statistics.
	Progress func(traffic.Stats)
	// AllowFailover lets failover faults promote a replica of a Sentinel or
	// Cluster rlctl did not start (--allow-failover); without it such a
	// scenario is refused before it runs.
	AllowFailover bool
	// AllowFaults lets an http target's redis-stall, redis-reset,
	// redis-down and redis-latency act on the user's own deployment
	// (--allow-faults); without it such a scenario is refused before it
	// runs.
	AllowFaults bool
	// AllowScriptWrites runs a redis-script target on a Redis rlctl did not
	// start even when its script, watched first, touched more than its
	// KEYS (--allow-script-writes); the report then says rlctl cannot
	// vouch for keys outside the run's namespace.
	AllowScriptWrites bool
	// AfterRun, when set, is called with the run's Redis once the traffic
	// is over and before rlctl stops what it started, to read back what
	// Redis itself recorded.
	AfterRun func(ctx context.Context, redis *redisconn.Config)
	// Segment is this process's share of the scenario when several
	// processes run it at once (verify --segment); the zero Segment is
	// the whole.
	Segment workload.Segment
	// StartAt, when set, is the wall-clock instant the scenario's traffic
	// starts, the same on every machine of a shared run (verify
	// --start-at).
	StartAt time.Time
	// Now is the wall clock (time.Now when nil); tests skew it to play a
	// machine whose clock is off.
	Now func() time.Time
}

// shared reports whether the run is one of several to be merged: then each
// measures its clock against the shared reference.
func (o Options) shared() bool { return !o.Segment.IsWhole() || !o.StartAt.IsZero() }

// Outcome is one scenario's result.
type Outcome struct {
	Report report.Scenario
	// History is nil when the scenario could not start. A long run's has
	// spilled to disk: the caller closes it (RunSuite does).
	History *history.History
	// Saved is what re-scoring the history later needs.
	Saved rundir.Saved
	// Interrupted is set when ctx was cancelled mid-run: Report holds what
	// was measured until then.
	Interrupted bool
}

// Run runs one scenario. A scenario that cannot be set up (Redis
// unreachable, a bad script) comes back as an Outcome with status error
// and the error, so a suite can go on; the error carries its exit code.
func Run(ctx context.Context, sc *scenario.Scenario, o Options) (*Outcome, error) {
	out := &Outcome{Report: rundir.ReportOf(sc)}
	if why := unmet(sc, redisSpec(sc, o)); why != "" {
		out.Report.Decide(score.Skip(why))
		return out, nil
	}
	fail := func(err error) (*Outcome, error) {
		out.Report.Decide(score.NotMeasuredBy(rundir.SavedOf(sc).Claim(), err))
		return out, err
	}
	kind, known := target.Lookup(sc.Target.Kind)
	if !o.Segment.IsWhole() && sc.Traffic.Segment == workload.SegmentByRequests && known && !kind.Remote() {
		// Each machine's simulated gateways would keep limits of their own.
		return fail(exitcode.With(fmt.Errorf("%s:%d: traffic.segment: requests needs an http target: the gateways rlctl simulates on each machine would not share one limit", sc.File, sc.Line), exitcode.Usage))
	}
	spec := target.SpecOf(sc, o.Redis)
	spec.RedisOptions, spec.Shared = o.RedisOptions, o.shared()
	spec.AllowFailover, spec.AllowFaults, spec.AllowScriptWrites = o.AllowFailover, o.AllowFaults, o.AllowScriptWrites
	built, err := target.Build(ctx, spec)
	if err != nil {
		return fail(err)
	}
	defer built.Close()
	out.Saved = rundir.SavedOf(sc)
	out.Saved.Notes = built.Notes
	out.Saved.Embedded = built.Embedded

	plan := planOf(sc)
	plan.Segment, plan.SegmentBy = o.Segment, sc.Traffic.Segment
	plan.IdentityNames = built.IdentityNames
	now := o.Now
	if now == nil {
		now = time.Now
	}
	var clockErr func() error
	if o.shared() {
		clockErr = built.ShareClock(ctx, now)
	}
	if known && !kind.Remote() && !sc.MovesPrimary() {
		// rlctl's own gateways decide on its Redis's clock (score's
		// steady-clock check); real gateways may keep their own, and after
		// a failover another server's clock answers.
		built.WatchRedisClock(ctx)
	}
	meta := history.Meta{Scenario: sc.Name, Limit: sc.Limit}
	for _, f := range sc.Faults {
		meta.Faults = append(meta.Faults, history.Fault{At: f.At, For: f.For, Planned: f.At, Action: f.Action})
	}
	var errs errorSample
	h, runErr := traffic.Run(ctx, built.Target, plan, traffic.RunOptions{
		Meta: meta, Hooks: built.Hooks, Progress: o.Progress, OnError: errs.add,
		StartAt: o.StartAt, Now: o.Now, Grace: max(graceOf(sc), built.Grace),
	})
	if runErr != nil && h == nil {
		if errors.Is(runErr, traffic.ErrInvalidPlan) {
			runErr = exitcode.With(fmt.Errorf("%s:%d: traffic: %w", sc.File, sc.Line, runErr), exitcode.Usage)
		}
		if errors.Is(runErr, traffic.ErrLate) {
			runErr = exitcode.With(fmt.Errorf("%s: %w", sc.Name, runErr), exitcode.Failed)
		}
		return fail(runErr)
	}
	fin := built.Finish(ctx, h)
	out.Saved.Stuck, out.Saved.Unapplied = fin.Stuck, fin.Unapplied
	if o.shared() {
		out.Saved.RunNotes = sharedNotes(h, o, clockErr())
	}
	out.History = h
	out.Saved.Notes = append(out.Saved.Notes, fin.Notes...)
	if o.AfterRun != nil && built.Redis != nil {
		o.AfterRun(ctx, built.Redis)
	}
	if runErr != nil {
		if ctx.Err() == nil {
			return fail(runErr)
		}
		out.Interrupted, out.Saved.Interrupted = true, true
	}
	out.Saved.Errors = errs.list()
	out.Saved.Extra = fin.Extra
	out.Saved.CountsLostByIdentity = fin.CountsLostByIdentity
	r, err := rundir.Score(h, out.Saved)
	if err != nil {
		return fail(err)
	}
	out.Report = r
	if r.Status == score.StatusError {
		return out, exitcode.With(fmt.Errorf("%s: %s", sc.Name, r.Error), exitcode.Code(r.ExitCode))
	}
	return out, nil
}

// graceOf is how long a run's last requests may finish after its schedule
// ends: as long as one may take (a decision its Redis call's timeout; an
// http request its request_timeout, which the target's Built.Grace says),
// and at least traffic.DefaultGrace,
// so a slow answer still on its way is an answer, not an error of the
// run's own making.
func graceOf(sc *scenario.Scenario) time.Duration {
	g := max(traffic.DefaultGrace, sc.Target.Timeout)
	for _, ep := range sc.Target.Endpoints {
		g = max(g, ep.Timeout)
	}
	return g
}

// errorSample keeps the first few distinct errors a run's requests met.
type errorSample struct {
	mu   sync.Mutex
	msgs []string
}

const errorSampleSize = 3

func (s *errorSample) add(err error) {
	msg := err.Error()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.msgs) < errorSampleSize && !slices.Contains(s.msgs, msg) {
		s.msgs = append(s.msgs, msg)
	}
}

func (s *errorSample) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// redisSpec is the Redis a scenario's gateways use: --redis over the
// file's target.redis.
func redisSpec(sc *scenario.Scenario, o Options) string {
	if o.Redis != "" {
		return o.Redis
	}
	return sc.Target.Redis
}

func planOf(sc *scenario.Scenario) traffic.Plan {
	tr := sc.Traffic
	p := traffic.Plan{
		Model: tr.Model, Pattern: tr.Pattern, Rate: tr.Rate, Duration: tr.Duration,
		MaxRequests: int64(tr.MaxRequests), Workers: tr.Workers, Concurrency: tr.Concurrency,
		Identities: tr.Identities, Spread: tr.Spread, Limit: sc.Limit, BurstSize: tr.BurstSize,
		Align: tr.Align, Rounds: tr.Rounds, Retry: tr.Retry, Think: tr.Think,
	}
	if len(sc.Target.Endpoints) > 1 {
		for _, ep := range sc.Target.Endpoints {
			p.EndpointShares = append(p.EndpointShares, ep.Share)
		}
	}
	return p
}
