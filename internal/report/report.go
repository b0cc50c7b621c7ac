package report

import (
	"fmt"
	"slices"
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/score"
)

// Schema is the version of report.json's layout.
const Schema = "rlctl.report/v1"

// Report is one verify run. Its JSON form is the report.json contract of
// DESIGN.md: field names, and metrics keyed by analysis names.
type Report struct {
	Schema     string     `json:"schema"`
	Status     string     `json:"status"`
	Started    time.Time  `json:"started"`
	DurationMs int64      `json:"duration_ms"`
	Scenarios  []Scenario `json:"scenarios"`
	// Suite names the run's suite (the directory name), for titles.
	Suite string `json:"suite,omitempty"`
	// Verdicts are the scenarios' verdicts counted, as score decided them:
	// "8 designs hold", "6 flaws demonstrated".
	Verdicts []string `json:"verdicts,omitempty"`
	// Reason says why a run that measured nothing failed (no scenario, or
	// every one skipped), "" otherwise.
	Reason string `json:"reason,omitempty"`
}

// Scenario is one scenario's outcome.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Shows is "flaw" when the scenario demonstrates a flaw (it passes
	// when the flaw appears) or "holds" when it proves a design holds; see
	// Verdict.
	Shows string `json:"shows"`
	// Status is pass, fail, error (not measured) or skipped (not run), and
	// Verdict what that means in words ("flaw demonstrated"), both as
	// score decided them; Error says why a scenario was not measured or not
	// run.
	Status  string `json:"status"`
	Verdict string `json:"verdict"`
	Error   string `json:"error"`
	Limit   Limit  `json:"limit"`
	// Metrics holds only the metrics that apply to this scenario.
	Metrics    map[string]float64 `json:"metrics"`
	Thresholds []score.Threshold  `json:"thresholds"`
	// Validity is every validity check that applied to the run, held or
	// not (see score.Checks).
	Validity []score.CheckResult `json:"validity,omitempty"`
	// Notes are plain-language findings, e.g. why a token bucket's 2L-1 in
	// one window is its envelope and not a leak.
	Notes []string `json:"notes,omitempty"`
	// Target describes what was driven: "simulated redis-fixed-window ×50".
	Target string `json:"target,omitempty"`
	// Design is what was driven, field by field, for the summary's
	// questions (whose clock, which failure policy); nil when unknown.
	Design *Design `json:"design,omitempty"`
	// Faults are the faults the run injected, offsets from its start.
	Faults []Fault `json:"faults,omitempty"`
	// Started is when the scenario's traffic began (zero if it never did).
	Started time.Time `json:"started,omitzero"`
	// DurationMs is how long the scenario's traffic ran (JUnit's time), 0
	// if unknown.
	DurationMs int64 `json:"duration_ms,omitempty"`
	// HeaderForms names the rate-limit header families an http target's
	// answers carried: "retry-after", "draft-11", "draft-07", "draft-06",
	// "x-ratelimit".
	HeaderForms []string `json:"header_forms,omitempty"`
	// Outages are the stretches in which the limiter did not decide
	// (errors, fail-open, fail-closed, fallback) outside the planned
	// faults.
	Outages []Outage `json:"outages,omitempty"`
	// Failover splits a failover's figures by endpoint and, on a Redis
	// Cluster, by shard; nil when the run had no failover.
	Failover *Failover `json:"failover,omitempty"`
	// ExitCode is the exit code the scenario calls for, as score decided
	// it: 0 for a pass or a skip, 1 for a failed threshold, and for an
	// error its validity check's (3 when Redis or the target could not be
	// reached, 2 for invalid input, …). It is not part of report.json.
	ExitCode int `json:"-"`
	// Result carries the series the HTML charts draw; it is not part of
	// report.json.
	Result *analysis.Result `json:"-"`
}

// Decide puts score's verdict into sc: its status, verdict words, reason,
// exit code, thresholds, validity checks and notes.
func (sc *Scenario) Decide(v score.Verdict) {
	sc.Status, sc.Verdict, sc.Error, sc.ExitCode = v.Status, v.Words, v.Reason, int(v.Code)
	sc.Thresholds, sc.Validity, sc.Notes = v.Thresholds, v.Checks, v.Notes
}

// Outage is a stretch of a run in which requests went undecided, in
// report.json's form: offsets from the scenario's start and counts of the
// requests sent in it.
type Outage struct {
	FromMs     float64 `json:"from_ms"`
	ToMs       float64 `json:"to_ms"`
	FailOpen   int64   `json:"fail_open"`
	FailClosed int64   `json:"fail_closed"`
	Fallback   int64   `json:"fallback"`
	Errors     int64   `json:"errors"`
}

// Failover is a failover's figures part by part: each endpoint's, and on
// a Redis Cluster each shard's (the identities whose keys it held).
type Failover struct {
	Endpoints []FailoverPart `json:"endpoints,omitempty"`
	Shards    []FailoverPart `json:"shards,omitempty"`
	// Identities are each identity's own figures, in the run's order (at
	// most analysis.MaxFailoverIdentities, the worst).
	Identities []FailoverPart `json:"identities,omitempty"`
}

// failoverTableIdentities is how many identities a failover table shows,
// the worst first; report.json has them all.
const failoverTableIdentities = 10

// WorstIdentities is f's identities worst first, at most
// failoverTableIdentities.
func (f *Failover) WorstIdentities() []FailoverPart {
	ids := slices.Clone(f.Identities)
	slices.SortStableFunc(ids, func(x, y FailoverPart) int { return analysis.WorstFailoverFirst(x.Metrics, y.Metrics) })
	return ids[:min(len(ids), failoverTableIdentities)]
}

// failoverRow is one row of a failover table: what it is, and its figures.
type failoverRow struct {
	label   string
	metrics map[string]float64
}

// rows are f's table rows, as report.md and report.html show them: each
// endpoint, each Cluster shard, then the worst identities.
func (f *Failover) rows() []failoverRow {
	var out []failoverRow
	for _, e := range f.Endpoints {
		out = append(out, failoverRow{"endpoint " + e.Name, e.Metrics})
	}
	for _, s := range f.Shards {
		out = append(out, failoverRow{shardLabel(s), s.Metrics})
	}
	for _, id := range f.WorstIdentities() {
		out = append(out, failoverRow{"identity " + id.Name, id.Metrics})
	}
	return out
}

// MoreIdentities is how many of f's identities WorstIdentities leaves out.
func (f *Failover) MoreIdentities() int { return max(0, len(f.Identities)-failoverTableIdentities) }

// FailoverPart is one endpoint's, shard's or identity's failover figures,
// keyed by metric name (election_errors, election_fail_open,
// election_fail_closed; election_ms, failover_denied, failover_deny_ms and
// recover_ms for an endpoint or an identity; after_fault_ceiling for a
// shard or an identity; counts_lost for an identity, when the failover's
// counters were read).
type FailoverPart struct {
	// Name is the endpoint's name, the shard's (its primary's address
	// when the run started) or the identity's.
	Name string `json:"name"`
	// FailedOver marks the shard a failover acted on.
	FailedOver bool `json:"failed_over,omitempty"`
	// Identities is how many identities a shard held.
	Identities int                `json:"identities,omitempty"`
	Metrics    map[string]float64 `json:"metrics"`
}

// FailoverOf is res's per-endpoint and per-shard failover figures, nil
// when it has none.
func FailoverOf(res *analysis.Result) *Failover {
	if res == nil || (len(res.PerEndpoint) == 0 && len(res.PerShard) == 0) {
		return nil
	}
	f := &Failover{}
	for _, e := range res.PerEndpoint {
		f.Endpoints = append(f.Endpoints, FailoverPart{Name: e.Endpoint, Metrics: e.Metrics})
	}
	for _, s := range res.PerShard {
		f.Shards = append(f.Shards, FailoverPart{Name: s.Shard, FailedOver: s.FailedOver, Identities: s.Identities, Metrics: s.Metrics})
	}
	for _, id := range res.PerIdentityFailover {
		f.Identities = append(f.Identities, FailoverPart{Name: id.Identity, Metrics: id.Metrics})
	}
	return f
}

// FailoverColumns are the figures a failover table shows, in order.
var FailoverColumns = []string{
	metric.ElectionErrors, metric.ElectionFailOpen, metric.ElectionFailClosed,
	metric.ElectionMs, metric.FailoverDenied, metric.FailoverDenyMs, metric.AfterFaultCeiling, metric.CountsLost, metric.RecoverMs,
}

// Design is what a scenario ran, in the terms a reviewer asks about.
type Design struct {
	// Kind is simulated, http or redis-script.
	Kind string `json:"kind"`
	// Algorithm is the limiter design of a simulated target.
	Algorithm string `json:"algorithm,omitempty"`
	// Gateways is how many gateways enforced the limit.
	Gateways int `json:"gateways,omitempty"`
	// Clock is whose clock decides the window: "gateway" (each gateway's
	// own) or "redis" (Redis TIME or key expiry: one clock); empty when
	// unknown (an http target, a user's script).
	Clock string `json:"clock,omitempty"`
	// ClockSkewMs is the largest offset between gateway clocks.
	ClockSkewMs float64 `json:"clock_skew_ms,omitempty"`
	// Endpoints are the failure policies, one per endpoint.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// Endpoint is one endpoint's failure policy: on_error (open, closed or
// local) and on_failover (trust or deny).
type Endpoint struct {
	Name       string `json:"name"`
	OnError    string `json:"on_error"`
	OnFailover string `json:"on_failover"`
}

// Label is the design in a few words: "local-fixed-window ×10".
func (d *Design) Label() string {
	if d == nil {
		return ""
	}
	s := d.Kind
	if d.Algorithm != "" {
		s = d.Algorithm
	}
	if d.Gateways > 0 {
		s += fmt.Sprintf(" ×%d", d.Gateways)
	}
	return s
}

// ClockLabel says whose clock decided when gateway clocks were skewed
// ("gateway clock, skew ±300ms"), else "".
func (d *Design) ClockLabel() string {
	if d == nil || d.ClockSkewMs <= 0 {
		return ""
	}
	who := "gateway clocks"
	if d.Clock != "" {
		who = d.Clock + " clock"
	}
	return fmt.Sprintf("%s, skew ±%s", who, durationMs(int64(d.ClockSkewMs)))
}

// LongLabel is Label and ClockLabel on one line.
func (d *Design) LongLabel() string {
	if c := d.ClockLabel(); c != "" {
		return d.Label() + ", " + c
	}
	return d.Label()
}

// Fault is one injected fault: from FromMs for ForMs (0: an instant, like
// a failover, or until the end for a lasting fault).
type Fault struct {
	Action string  `json:"action"`
	FromMs float64 `json:"from_ms"`
	ForMs  float64 `json:"for_ms,omitempty"`
	// ElectionFromMs and ElectionToMs, for a real failover, are when the
	// old primary first refused or failed a write and when the new one
	// first took one (0 when not observed).
	ElectionFromMs float64 `json:"election_from_ms,omitempty"`
	ElectionToMs   float64 `json:"election_to_ms,omitempty"`
}

// Instant reports whether the fault happens at one moment (a failover, a
// kill, a reset) rather than lasting.
func (f Fault) Instant() bool {
	return f.ForMs == 0 && design.InstantFault(f.Action)
}

// Describe is the fault in words: "redis-down at 1s for 1s", "failover at
// 1.5s", "redis-latency from 2s to the end".
func (f Fault) Describe() string {
	switch {
	case f.Instant():
		return fmt.Sprintf("%s at %s", f.Action, durationMs(int64(f.FromMs)))
	case f.ForMs == 0:
		return fmt.Sprintf("%s from %s to the end", f.Action, durationMs(int64(f.FromMs)))
	}
	return fmt.Sprintf("%s at %s for %s", f.Action, durationMs(int64(f.FromMs)), durationMs(int64(f.ForMs)))
}

// Limit is a published limit in report.json's form.
type Limit struct {
	Count    int64 `json:"count"`
	WindowMs int64 `json:"window_ms"`
}

// LimitOf converts a rate.Limit.
func LimitOf(l rate.Limit) Limit {
	return Limit{Count: l.Count, WindowMs: l.Window.Milliseconds()}
}

// Rate converts back to a rate.Limit.
func (l Limit) Rate() rate.Limit {
	return rate.Limit{Count: l.Count, Window: time.Duration(l.WindowMs) * time.Millisecond}
}

func (l Limit) String() string { return l.Rate().String() }
