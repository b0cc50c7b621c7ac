package verify

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/textfmt"
)

// faultGrace is how long after a planned fault ends its effects may still
// show (connections re-established, a pool refilled) before an undecided
// request counts as unplanned.
const faultGrace = 500 * time.Millisecond

// outageGap joins undecided requests less than this apart into one outage.
const outageGap = 500 * time.Millisecond

// forever stands for "until the end of the run".
const forever = time.Duration(math.MaxInt64)

// plannedSpans are the stretches of a run its planned faults account for:
// a timed fault for its duration, one without a duration until the end
// (redis-down, redis-latency, gateway-down), a failover for the window in
// which gateways may deny after noticing it or until its election ended
// (the new primary took a write), whichever is later, an instantaneous
// reset for a moment. Each is widened by faultGrace. A real failover whose
// election never ended accounts for the rest of the run.
func plannedSpans(m history.Meta) []analysis.Span {
	var out []analysis.Span
	for _, f := range m.Faults {
		end := forever
		switch {
		case f.For > 0:
			end = f.At + f.For + faultGrace
		case f.Action == scenario.FaultFailover && f.Stopped > 0 && f.Answered == 0:
			// A real failover that elected no primary before the end.
		case f.Action == scenario.FaultFailover || (f.Action == scenario.FaultKillPrimary && f.Answered > 0):
			end = max(f.At+m.Limit.Window, f.Answered) + faultGrace
		case f.Action == scenario.FaultRedisReset:
			end = f.At + faultGrace
		}
		out = append(out, analysis.Span{From: f.At, To: end})
	}
	return out
}

// verdict is whether a run measured what its scenario claims: a run whose
// requests went unanswered, or were decided by a failure policy because
// Redis failed outside the planned faults, measured the outage, not the
// design, and must never pass.
type verdict struct {
	err     string // empty: the run measured the design
	code    exitcode.Code
	outages []analysis.Outage
	note    string // undecided requests within the bound, said anyway
}

// judge applies the validity check every scenario gets, beside its own
// thresholds. Counts come from m; outages from h.
func judge(h *history.History, s Saved, m analysis.Metrics) verdict {
	var v verdict
	total := int64(m[analysis.Requests])
	dropped := int64(m[analysis.Dropped])
	sent := total - dropped
	answered := int64(m[analysis.Allowed] + m[analysis.Denied])
	who := "Redis"
	if s.kind() == scenario.KindHTTP {
		who = "the target"
	}
	firstErrs := ""
	if len(s.Errors) > 0 {
		firstErrs = "; first errors: " + strings.Join(s.Errors, "; ")
	}
	switch {
	case total == 0:
		v.err, v.code = "no request was scheduled: nothing was measured", exitcode.Failed
		return v
	case sent == 0:
		v.err = fmt.Sprintf("no request was sent: all %d were dropped (no worker was free at its time), so nothing was measured", dropped)
		v.code = exitcode.Failed
		return v
	case answered == 0:
		v.err = fmt.Sprintf("nothing answered: all %d requests sent failed, so nothing was measured%s", sent, firstErrs)
		v.code = exitcode.Unreachable
		return v
	}
	v.outages = analysis.Outages(h, plannedSpans(h.Meta), outageGap)
	var undecided, policy, errs int64
	for _, o := range v.outages {
		undecided += o.Undecided()
		policy += o.FailOpen + o.FailClosed + o.Fallback
		errs += o.Errors
	}
	if undecided == 0 {
		return v
	}
	bound := s.maxErrorRate()
	share := float64(undecided) / float64(sent)
	what := describeOutages(v.outages, who)
	if share <= bound {
		v.note = fmt.Sprintf("%s (%s of requests, within max_error_rate %s)", what, textfmt.Percent(share), textfmt.Percent(bound))
		return v
	}
	if policy > 0 || s.kind() != scenario.KindHTTP {
		// The gateways answered, but their failure policy did, not the
		// limiter: Redis could not be reached (or not in time).
		v.err = fmt.Sprintf("%s, outside any planned fault: %s of requests went undecided, above max_error_rate %s; the run measured the outage, not the design%s", what, textfmt.Percent(share), textfmt.Percent(bound), firstErrs)
		v.code = exitcode.Unreachable
		return v
	}
	v.err = fmt.Sprintf("%d of %d requests (%s) got no deciding answer, above max_error_rate %s: the figures do not measure the limiter%s", errs, sent, textfmt.Percent(share), textfmt.Percent(bound), firstErrs)
	v.code = exitcode.Failed
	return v
}

// describeOutages says in one sentence when the limiter did not decide and
// what answered instead: "Redis failed from t=1.20s to t=3.40s (812 failed
// open, 3 errors)".
func describeOutages(os []analysis.Outage, who string) string {
	const show = 3
	var spans []string
	for i, o := range os {
		if i == show {
			spans = append(spans, fmt.Sprintf("and %d more stretches", len(os)-show))
			break
		}
		var what []string
		for _, c := range []struct {
			n    int64
			name string
		}{{o.FailOpen, "failed open"}, {o.FailClosed, "failed closed"}, {o.Fallback, "fell back"}, {o.Errors, "errors"}} {
			if c.n > 0 {
				what = append(what, fmt.Sprintf("%d %s", c.n, c.name))
			}
		}
		spans = append(spans, fmt.Sprintf("t=%s–%s (%s)", seconds(o.From), seconds(o.To), strings.Join(what, ", ")))
	}
	return fmt.Sprintf("%s did not decide: unreachable, failing or slower than the timeout at %s", who, strings.Join(spans, ", "))
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// reportOutages converts outages to report.json's form.
func reportOutages(os []analysis.Outage) []report.Outage {
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
