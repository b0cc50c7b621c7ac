package verify

import (
	"context"
	"fmt"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault/inject"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/textfmt"
)

// openSimulated opens the simulated gateways' Redis: with replicate on
// redis: spawn, a primary and that many replicas, else as openRedis does.
func (e *env) openSimulated(ctx context.Context, sc *scenario.Scenario, spec string, o Options) (*redisconn.Config, func() error, error) {
	n := sc.Target.Replicate
	if n == 0 || spec != redisconn.SpecSpawn {
		return openRedis(ctx, spec, o, inject.NeedsReplica(sc))
	}
	d, err := redisconn.Spawn(ctx, redisconn.SpawnOptions{Replicas: n})
	if err != nil {
		return nil, nil, exitcode.With(fmt.Errorf("%s: spawn a primary with %d replicas: %w", sc.Name, n, err), exitcode.Unreachable)
	}
	opts := o.RedisOptions
	opts.URL = d.ServerURL(0)
	cfg, err := redisconn.Parse(opts)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	e.replicas = d
	return cfg, d.Close, nil
}

// failoverNotes say what a failover did, in the failover figures' own
// words; none for a run without one.
func failoverNotes(s Saved, m analysis.Metrics) []string {
	if _, ok := m[metric.ElectionMs]; !ok {
		return nil
	}
	var out []string
	L := float64(s.Limit.Count)
	if v := m[metric.CountsLost]; v > 0 {
		out = append(out, fmt.Sprintf("the new primary lacked %s the old one held just before the failover: each identity's quota began again", textfmt.Count(v, "count")))
	}
	if v, ok := m[metric.AfterFaultCeiling]; ok && v > L && v != m[metric.Ceiling] {
		// (when it is the run's ceiling, the ceiling's note says it)
		out = append(out, fmt.Sprintf("across the failover one identity had %s admitted within %s: %s the published %s", textfmt.Num(v), s.Limit.Window, textfmt.Ratio(v/L), textfmt.Num(L)))
	}
	if e, o, c := m[metric.ElectionErrors], m[metric.ElectionFailOpen], m[metric.ElectionFailClosed]; e+o+c > 0 {
		out = append(out, fmt.Sprintf("while the primary changed (%sms from the failover): %s, %s admitted fail-open, %s refused fail-closed",
			textfmt.Num(m[metric.ElectionMs]), textfmt.Count(e, "error"), textfmt.Num(o), textfmt.Num(c)))
	}
	if v := m[metric.FailoverDenied]; v > 0 {
		out = append(out, fmt.Sprintf("the gateways detected the failover %sms after it began and refused %s for it over %sms (on_failover: deny)",
			textfmt.Num(m[metric.FailoverDetectMs]), textfmt.Count(v, "request"), textfmt.Num(m[metric.FailoverDenyMs])))
	}
	return out
}
