package verify

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/atomicfile"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/scenario"
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
	// Notes from setting the run up (e.g. how a failover was staged).
	Notes []string `json:"notes,omitempty"`
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

// SavedOf describes sc for re-scoring.
func SavedOf(sc *scenario.Scenario) Saved {
	s := Saved{Name: sc.Name, Description: sc.Description, Shows: sc.Shows, Target: sc.Target.String(),
		Design: designOf(sc), Limit: sc.Limit, Analysis: analysisOptions(sc)}
	rate := sc.MaxErrorRate
	s.MaxErrorRate = &rate
	if sc.Target.Kind == scenario.KindSimulated {
		s.Algorithm = sc.Target.Algorithm
	}
	s.Thresholds = sc.Thresholds
	return s
}

// Score analyses h and checks s's thresholds, as verify does at the end of
// a run. Beside the thresholds every run gets a validity check: a run
// whose requests went undecided (see judge) is an error, whatever the
// thresholds say. The error is for a history spilled to disk that cannot
// be read back.
func Score(h *history.History, s Saved) (report.Scenario, error) {
	res, err := analysis.AnalyzeDisk(h, s.Analysis)
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
	r := report.Scenario{
		Name: s.Name, Description: s.Description, Shows: s.Shows, Target: s.Target, Design: s.Design,
		Limit: report.LimitOf(s.Limit), Metrics: map[string]float64(res.Metrics), Result: &res,
		Started: h.Meta.Start, DurationMs: ran(h).Milliseconds(), Faults: reportFaults(h.Meta.Faults),
		HeaderForms: h.Meta.HeaderForms, Failover: report.FailoverOf(&res),
	}
	if r.Shows == "" {
		// Saved before scenarios said what they show.
		r.Shows = scenario.ShowsHolds
	}
	r.Thresholds = report.Thresholds(s.Thresholds, res.Metrics, s.Limit)
	r.Notes = append([]string(nil), s.Notes...)
	v := judge(h, s, res.Metrics)
	r.Outages = reportOutages(v.outages)
	if v.err != "" {
		r.Status, r.Error, r.ExitCode = report.StatusError, v.err, int(v.code)
	} else if v.note != "" {
		r.Notes = append(r.Notes, v.note)
	}
	r.Notes = append(r.Notes, notes(h, s, res.Metrics)...)
	r.Settle()
	return r, nil
}

// reportOf is a scenario's report before it has run: what it is, with no
// figures yet.
func reportOf(sc *scenario.Scenario) report.Scenario {
	return report.Scenario{
		Name: sc.Name, Description: sc.Description, Shows: sc.Shows, Limit: report.LimitOf(sc.Limit),
		Target: sc.Target.String(), Design: designOf(sc),
	}
}

// designOf describes sc's target for the report: its design, gateways,
// whose clock decides and each endpoint's failure policy.
func designOf(sc *scenario.Scenario) *report.Design {
	t := sc.Target
	d := &report.Design{Kind: t.Kind, Gateways: t.Gateways, ClockSkewMs: ms(t.ClockSkew)}
	if t.Kind == scenario.KindSimulated {
		d.Algorithm = t.Algorithm
		switch t.Algorithm {
		case limiter.LocalFixedWindow, limiter.LocalTokenBucket:
			d.Clock = scenario.ClockGateway
		case limiter.RedisGetIncr, limiter.RedisFixedWindow, limiter.RedisFixedWindowRefresh:
			// The window is a key's expiry: Redis's clock alone.
			d.Clock = scenario.ClockRedis
		default:
			d.Clock = limiter.Config{Algorithm: t.Algorithm, Clock: t.Clock}.EffectiveClock()
		}
	}
	for _, e := range t.Endpoints {
		d.Endpoints = append(d.Endpoints, report.Endpoint{Name: e.Name, OnError: e.OnError, OnFailover: e.OnFailover})
	}
	return d
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

// ran is how long h's traffic ran: from its start to its last answer.
func ran(h *history.History) time.Duration {
	var last time.Duration
	eachRecord(h, func(h *history.History, i int) { last = max(last, h.Intended(i), h.Sent(i), h.Received(i)) })
	return last
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
