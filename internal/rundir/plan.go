package rundir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/ceiling"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/scenario"
)

// SavedOf describes sc for scoring, now and when re-rendered.
func SavedOf(sc *scenario.Scenario) Saved {
	s := Saved{Name: sc.Name, Description: sc.Description, Shows: sc.Shows, Target: sc.Target.String(),
		Design: designOf(sc), Limit: sc.Limit, Analysis: analysisOptions(sc)}
	rate := sc.MaxErrorRate
	s.MaxErrorRate = &rate
	if sc.Target.Kind == scenario.KindSimulated {
		s.Algorithm = sc.Target.Algorithm
	}
	s.Thresholds = sc.Thresholds
	s.Planned = sc.Traffic.Duration
	s.Plan = planName(sc)
	return s
}

// planName fingerprints sc's plan: its limit, target, traffic and faults
// as the file gives them, so runs of one scenario name tell whether they
// ran the same plan.
func planName(sc *scenario.Scenario) string {
	faults := slices.Clone(sc.Faults)
	for i := range faults {
		faults[i].Line = 0
	}
	b, _ := json.Marshal(struct {
		Limit   rate.Limit
		Target  string
		Traffic scenario.Traffic
		Faults  []scenario.Fault
	}{sc.Limit, sc.Target.String(), sc.Traffic, faults})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ReportOf is a scenario's report before it has run: what it is, with no
// figures yet.
func ReportOf(sc *scenario.Scenario) report.Scenario {
	return report.Scenario{
		Name: sc.Name, Description: sc.Description, Shows: sc.Shows, Limit: report.LimitOf(sc.Limit),
		Target: sc.Target.String(), Design: designOf(sc),
	}
}

// designOf describes sc's target for the report: its design, gateways,
// whose clock decides and each endpoint's failure policy.
func designOf(sc *scenario.Scenario) *report.Design {
	t := sc.Target
	d := &report.Design{Kind: t.Kind, Gateways: t.Gateways, ClockSkewMs: float64(t.ClockSkew.Microseconds()) / 1000}
	if t.Kind == scenario.KindSimulated {
		d.Algorithm = t.Algorithm
		if dd, ok := design.Lookup(t.Algorithm); ok {
			d.Clock = dd.Clock.Of(t.Clock)
		}
	}
	for _, e := range t.Endpoints {
		d.Endpoints = append(d.Endpoints, report.Endpoint{Name: e.Name, OnError: e.OnError, OnFailover: e.OnFailover})
	}
	return d
}

// analysisOptions sets the envelope a correct limiter of the scenario's own
// design obeys (ceiling.Envelope), so `slipped` counts what the design
// should never allow and not what it allows by design.
func analysisOptions(sc *scenario.Scenario) analysis.Options {
	design := ""
	if sc.Target.Kind == scenario.KindSimulated {
		design = sc.Target.Algorithm
	}
	burst, perSecond := ceiling.Envelope(design, ceiling.Params{
		Limit: sc.Limit, Gateways: sc.Target.Gateways, Lease: sc.Target.Lease.Size, Capacity: sc.Target.Capacity,
	})
	return analysis.Options{EnvelopeBurst: burst, EnvelopeRate: perSecond}
}
