package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/atomicfile"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/threshold"
)

// Saved is what `report render` and `report merge` need beside a history to
// score a run again exactly as verify did: the thresholds, the analysis
// options (the design's envelope) and the figures a history cannot hold.
// verify writes it next to each history as <name>.json.
type Saved struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Shows       string         `json:"shows,omitempty"`
	Target      string         `json:"target"`
	Design      *report.Design `json:"design,omitempty"`
	Algorithm   string         `json:"algorithm,omitempty"`
	Limit       rate.Limit     `json:"limit"`
	// Thresholds are saved as their expressions and parsed as they are
	// read back.
	Thresholds []threshold.Threshold `json:"thresholds"`
	Analysis   analysis.Options      `json:"analysis"`
	// Extra are measured figures that live outside the history, such as
	// the lease budget stranded on gateways; merging adds them up.
	Extra map[string]float64 `json:"extra,omitempty"`
	// CountsLostByIdentity is counts_lost identity by identity, those that
	// lost any; merging adds them up.
	CountsLostByIdentity map[string]float64 `json:"counts_lost_by_identity,omitempty"`
	// Notes from setting the run up (e.g. how a failover was staged), the
	// same on every machine of a shared run.
	Notes []string `json:"notes,omitempty"`
	// RunNotes are this machine's own (its segment, how late it started,
	// its clock): a merge says them for every run at once instead.
	RunNotes []string `json:"run_notes,omitempty"`
	// Planned is how long the scenario's traffic was meant to run.
	Planned time.Duration `json:"planned_ns,omitempty"`
	// Plan names the scenario's plan (its target and traffic, as the file
	// says them), so a merge can refuse runs of another plan; "" in runs
	// saved before it was recorded.
	Plan string `json:"plan,omitempty"`
	// Embedded is set when the run's design decided through the embedded
	// Redis (not a local design, which keeps its counts in the gateways).
	Embedded bool `json:"embedded,omitempty"`
	// Stuck says why the run left its Redis unusable (a user's script
	// still running, answering BUSY), "" when it did not.
	Stuck string `json:"stuck,omitempty"`
	// Unapplied names the planned faults that could not be carried out,
	// and why (score's faulted check).
	Unapplied []string `json:"unapplied,omitempty"`
	// Interrupted is set when the run was cut short: its figures cover
	// only what ran, and its thresholds are not judged.
	Interrupted bool `json:"interrupted,omitempty"`
	// MaxErrorRate is the scenario's max_error_rate; nil (a run saved
	// before it existed) means scenario.DefaultMaxErrorRate.
	MaxErrorRate *float64 `json:"max_error_rate,omitempty"`
	// Errors are the first distinct errors the run's requests met, for
	// the report to say what went wrong.
	Errors []string `json:"errors,omitempty"`
}

// kind is the target kind the scenario drove ("" for runs saved before
// reports described their design).
func (s Saved) kind() string {
	if s.Design == nil {
		return ""
	}
	return s.Design.Kind
}

func (s Saved) maxErrorRate() float64 {
	if s.MaxErrorRate == nil {
		return scenario.DefaultMaxErrorRate
	}
	return *s.MaxErrorRate
}

// Score analyses h and decides its verdict (score.Judge), as verify does
// at the end of a run: beside the thresholds every run gets the validity
// checks, and one that did not measure what it claims is an error,
// whatever the thresholds say. The error is for a history spilled to disk
// that cannot be read back.
func Score(h *history.History, s Saved) (report.Scenario, error) {
	return scoreRun(h, s, s.Interrupted, nil)
}

// scoreRun is Score for a run that was interrupted, or (merge not nil)
// that joins several runs.
func scoreRun(h *history.History, s Saved, interrupted bool, merge *score.Merge) (report.Scenario, error) {
	res, err := analysis.Analyze(h, s.Analysis)
	if err != nil {
		return report.Scenario{}, fmt.Errorf("%s: %w", s.Name, err)
	}
	for k, v := range s.Extra {
		res.Metrics[k] = v
	}
	if _, ok := s.Extra[metric.CountsLost]; ok {
		// Read from Redis for every identity: none listed means none lost.
		for _, id := range res.PerIdentityFailover {
			id.Metrics[metric.CountsLost] = s.CountsLostByIdentity[id.Identity]
		}
	}
	f := factsOf(h, s, &res)
	r := report.Scenario{
		Name: s.Name, Description: s.Description, Shows: s.Shows, Target: s.Target, Design: s.Design,
		Limit: report.LimitOf(s.Limit), Metrics: map[string]float64(res.Metrics), Result: &res,
		Started: h.Meta.Start, DurationMs: f.Ran.Milliseconds(), Faults: reportFaults(h.Meta.Faults),
		HeaderForms: h.Meta.HeaderForms, Failover: report.FailoverOf(&res),
	}
	if r.Shows == "" {
		// Saved before scenarios said what they show.
		r.Shows = design.ShowsHolds
	}
	f.Interrupted, f.Planned, f.Merge = interrupted, s.Planned, merge
	if merge == nil {
		f.Notes = append(f.Notes, s.RunNotes...)
	}
	r.Outages = reportOutages(f.Outages)
	r.Decide(score.Judge(s.Claim(), f))
	return r, nil
}

// reportFaults converts a history's faults to report.json's form.
func reportFaults(fs []history.Fault) []report.Fault {
	var out []report.Fault
	for _, f := range fs {
		out = append(out, report.Fault{Action: f.Action, FromMs: ms(f.At), ForMs: ms(f.For),
			ElectionFromMs: ms(f.Stopped), ElectionToMs: ms(f.Answered)})
	}
	return out
}

// spans are how long h's traffic ran, from its start to its last answer,
// and when its last request was sent (the rate it sent at is over that).
func spans(h *history.History) (ran, lastSent time.Duration) {
	eachRecord(h, func(h *history.History, i int) {
		ran = max(ran, h.Intended(i), h.Sent(i), h.Received(i))
		lastSent = max(lastSent, h.Sent(i))
	})
	return ran, lastSent
}

// WriteFile saves s as JSON at path.
func (s Saved) WriteFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// ReadSaved reads a Saved written by WriteFile.
func ReadSaved(path string) (Saved, error) {
	var s Saved
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// eachRecord calls fn with every record of h, a chunk at a time when h
// spilled to disk. A read error ends it early: Score's analysis reports
// it.
func eachRecord(h *history.History, fn func(c *history.History, i int)) {
	_ = h.Chunks(func(c *history.History) error {
		for i := range c.Len() {
			fn(c, i)
		}
		return nil
	})
}
