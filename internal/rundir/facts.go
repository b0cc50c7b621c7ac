package rundir

import (
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/score"
)

// Claim is what s's scenario claims, for score.
func (s Saved) Claim() score.Claim {
	c := score.Claim{
		Name: s.Name, Shows: s.Shows, Kind: s.kind(), Algorithm: s.Algorithm, Limit: s.Limit,
		Thresholds: s.Thresholds, MaxErrorRate: s.maxErrorRate(), EnvelopeBurst: s.Analysis.EnvelopeBurst,
	}
	if s.Design != nil {
		for _, e := range s.Design.Endpoints {
			c.Endpoints = append(c.Endpoints, score.Endpoint{Name: e.Name, OnError: e.OnError, OnFailover: e.OnFailover})
		}
	}
	return c
}

// factsOf gathers what score judges a run by: the analysis's figures and
// what it found of the run's own conduct, the outages outside the planned
// faults, and what the history says the run did. It reads h (the outages,
// the drops) and does not judge.
func factsOf(h *history.History, s Saved, res *analysis.Result) score.Facts {
	m := h.Meta
	f := score.Facts{
		Metrics: res.Metrics, FirstErrors: s.Errors, Statuses: m.Statuses, Unanswered: res.Conduct.Unanswered,
		HeaderForms: m.HeaderForms, Retry: m.Retry, Notes: s.Notes, Stuck: s.Stuck, Unapplied: s.Unapplied, Faults: len(m.Faults),
		Stamps:   score.Stamps{Total: res.Conduct.Stamps.Total, Ignored: res.Conduct.Stamps.Ignored, Untrusted: res.Conduct.Stamps.Untrusted, Shift: res.Conduct.Stamps.Shift},
		FromSent: res.Conduct.FromSent,
	}
	if m.Segment == "" {
		f.DeniedFirst, f.Opened = res.Conduct.DeniedFirst, res.Conduct.Opened
	}
	var lastSent time.Duration
	f.Ran, lastSent = spans(h)
	f.WallMoved, f.RedisMoved = m.WallMoved, m.RedisMoved
	f.Embedded = s.Embedded
	f.BoundaryPattern = m.BoundarySpan > 0
	if s.Embedded && lastSent > 0 {
		f.EmbeddedRate = float64(h.Len()) / lastSent.Seconds()
	}
	var faults []score.Fault
	for _, ft := range m.Faults {
		faults = append(faults, score.Fault{Action: ft.Action, At: ft.At, For: ft.For, Stopped: ft.Stopped, Answered: ft.Answered, Demoted: ft.Demoted})
	}
	f.Applied = faults
	var planned []analysis.Span
	for _, sp := range score.PlannedSpans(faults, m.Limit.Window) {
		planned = append(planned, analysis.Span{From: sp.From, To: sp.To})
	}
	for _, o := range analysis.Outages(h, planned, score.OutageGap) {
		f.Outages = append(f.Outages, score.Outage{From: o.From, To: o.To, FailOpen: o.FailOpen, FailClosed: o.FailClosed, Fallback: o.Fallback, Errors: o.Errors})
	}
	if res.Metrics[metric.Dropped] > 0 {
		d := analysis.ExplainDrops(h)
		f.Drops = &score.Drops{Dropped: d.Dropped, SlowTarget: d.SlowTarget, Workers: d.Workers, Service: d.Service, Rate: d.Rate}
	}
	for _, b := range res.Conduct.Boundaries {
		sb := score.Boundary{At: b.At, Span: m.BoundarySpan, Rolled: b.Rolled, Uncertainty: -1, Before: b.Before, Early: b.Early, AdmittedBefore: b.AdmittedBefore}
		if b.Aim != nil {
			sb.Aim, sb.Uncertainty = b.Aim.How, b.Aim.Uncertainty
		}
		f.Boundaries = append(f.Boundaries, sb)
	}
	if res.Conduct.Race.Releases > 0 {
		f.Race = &score.Race{Releases: res.Conduct.Race.Releases, Concurrent: res.Conduct.Race.Concurrent}
	}
	return f
}

// reportOutages converts outages to report.json's form.
func reportOutages(os []score.Outage) []report.Outage {
	var out []report.Outage
	for _, o := range os {
		out = append(out, report.Outage{
			FromMs: ms(o.From), ToMs: ms(o.To),
			FailOpen: o.FailOpen, FailClosed: o.FailClosed, Fallback: o.Fallback, Errors: o.Errors,
		})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
