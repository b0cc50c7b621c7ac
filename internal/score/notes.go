package score

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/textfmt"
	"github.com/rlctl/rlctl/internal/threshold"
)

// findings turn a run's figures into the plain-language notes a reader
// needs, after the conductor's own (Facts.Notes) and those of the checks
// that only weaken the figures (checked). Each says only what the figures
// bear out.
func findings(c Claim, f Facts, v Verdict, checked []string) []string {
	out := append([]string(nil), f.Notes...)
	if f.Merge != nil {
		out = append(out, mergeNote(*f.Merge))
	}
	if len(v.Thresholds) > 0 && v.Thresholds[0].Default {
		out = append(out, "the scenario names no threshold, so its claim is the published cap: "+DefaultThreshold+" (the default)")
	}
	out = append(out, checked...)
	out = append(out, timingBoundNotes(c, f, v)...)
	if n := undecidedNote(c, f); n != "" {
		out = append(out, n)
	}
	for _, n := range []string{embeddedNote(f), stampsShiftNote(f), unansweredNote(c, f)} {
		if n != "" {
			out = append(out, n)
		}
	}
	if n := staleNote(f); n != "" {
		out = append(out, n)
	}
	m := f.Metrics
	L := float64(c.Limit.Count)
	W := c.Limit.Window
	if ceil, ok := m[metric.Ceiling]; ok && ceil > L {
		out = append(out, fmt.Sprintf("admitted up to %s for one identity within %s: %s the published %s", textfmt.Num(ceil), W, textfmt.Ratio(ceil/L), textfmt.Num(L)))
		if n := failOpenByChoice(c, m); n != "" {
			out = append(out, n)
		}
	}
	if r := f.Race; r != nil && r.Concurrent < r.Releases && r.Concurrent > 0 {
		out = append(out, fmt.Sprintf("%d of %d race releases had two requests in flight at once (on a busy machine the others ran one after another): race_excess rests on those", r.Concurrent, r.Releases))
	}
	if v := m[metric.RaceExcess]; v > 0 {
		out = append(out, fmt.Sprintf("%s passed the check at L−1 beside the one that should: the read and the write are not one atomic step", textfmt.Count(v, "request")))
	}
	if v, ok := m[metric.BoundaryAllowed]; ok && v > L {
		out = append(out, fmt.Sprintf("%s admitted in a short span around a window boundary: L at the end of one window and L at the start of the next", textfmt.Num(v)))
	}
	if d, ok := design.Lookup(c.Algorithm); ok {
		switch d.Note {
		case design.NoteBucket:
			out = append(out, bucketNote(c, m))
		case design.NoteTTLRefresh:
			out = append(out, "the expiry is refreshed on every request: under continuous traffic the window never rolls and a busy caller stays locked out")
		}
	}
	if v := m[metric.FailOpen]; v > 0 {
		out = append(out, fmt.Sprintf("%s admitted with no limit while Redis failed (fail-open)", textfmt.Count(v, "request")))
	}
	if v := m[metric.FailClosed]; v > 0 {
		out = append(out, fmt.Sprintf("%s refused because Redis failed (fail-closed)", textfmt.Count(v, "request")))
	}
	out = append(out, failoverNotes(c, m)...)
	if f.Drops != nil && f.Drops.Dropped > 0 {
		out = append(out, dropNote(*f.Drops, f.Embedded))
	}
	if len(f.HeaderForms) > 0 {
		out = append(out, formsNote(f.HeaderForms))
	}
	if f.Retry != "" {
		out = append(out, retryNote(f.Retry, m, L))
	}
	if lag, p99 := m[metric.SendLagP99], m[metric.P99]; lag >= sendLagNoteMs && 4*lag >= p99 {
		out = append(out, fmt.Sprintf("rlctl itself sent 1%% of requests %sms or more after their scheduled time (its own CPU or scheduling, not the target): latency is measured from the schedule, so p99 %sms includes that delay; a lower rate, fewer gateways or a quieter machine gives the target's own figure", textfmt.Num(lag), textfmt.Num(p99)))
	}
	return out
}

// mergeNote says what a merged run joins: "merge of 2 runs: segment 0/2
// (clock +1.2ms ±0.3ms against redis TIME), segment 1/2 (…)".
// staleNote says when identities met a counter that was not fresh: a
// fresh counter admits an identity's first request, sent alone, in every
// design.
func staleNote(f Facts) string {
	if f.DeniedFirst == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %s were denied their very first request, sent alone, which a fresh counter admits in every design: their counter held counts before the run (a previous run's still in its window, or a real user's), or they share one (a client address, say). Unless that is what the scenario shows, the run's first window admitted less than a fresh one would: wait a window between runs, or give the run identities of its own",
		f.DeniedFirst, textfmt.Count(f.Opened, "identity"))
}

func mergeNote(m Merge) string {
	var parts []string
	for _, s := range m.Runs {
		p := segmentName(s)
		var about []string
		if s.Reference != "" {
			about = append(about, fmt.Sprintf("clock %s ±%v against %s", signed(s.Offset), s.Uncertainty.Round(time.Microsecond), s.Reference))
		} else {
			about = append(about, "clock not compared with a shared reference")
		}
		if s.Late > 0 {
			about = append(about, fmt.Sprintf("started %v late", s.Late.Round(time.Microsecond)))
		}
		parts = append(parts, p+" ("+strings.Join(about, ", ")+")")
	}
	return fmt.Sprintf("merge of %d runs: %s; every history was moved onto the reference's time line and each request's send and receive widened by its run's uncertainty", len(m.Runs), strings.Join(parts, ", "))
}

// signed is d with its sign: "+1.2ms", "-300µs".
func signed(d time.Duration) string {
	d = d.Round(time.Microsecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// undecidedNote says when some requests went undecided outside the
// planned faults, within max_error_rate (above it the run is not
// measured).
func undecidedNote(c Claim, f Facts) string {
	undecided, _, _ := undecidedOf(f)
	_, _, sent, _ := counts(f)
	if undecided == 0 || sent == 0 {
		return ""
	}
	share := float64(undecided) / float64(sent)
	if share > c.MaxErrorRate {
		return ""
	}
	return fmt.Sprintf("%s (%s of requests, within max_error_rate %s)", describeOutages(f.Outages, c, f), textfmt.Percent(share), textfmt.Percent(c.MaxErrorRate))
}

// failOpenByChoice says, when a run admitted past the limit while an
// endpoint failed open, that the excess may be that endpoint's policy
// admitting without a limit, as it was told to, not the design leaking.
func failOpenByChoice(c Claim, m map[string]float64) string {
	open := m[metric.FailOpen]
	if open == 0 {
		return ""
	}
	var names []string
	for _, e := range c.Endpoints {
		if e.OnError == design.OnErrorOpen {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	excess := m[metric.Ceiling] - float64(c.Limit.Count)
	who := "endpoint " + strings.Join(names, ", ")
	if len(c.Endpoints) == 1 {
		who = "the endpoint"
	}
	if excess <= open {
		return fmt.Sprintf("the %s over the limit are at most the %s admitted fail-open: %s chose to admit without a limit while Redis failed (on_error: open), a policy, not a leak of the design; the published limit did not hold through the outage",
			textfmt.Num(excess), textfmt.Count(open, "request"), who)
	}
	return fmt.Sprintf("%s admitted fail-open (%s, on_error: open) while Redis failed; the ceiling's excess of %s is more than they account for", textfmt.Count(open, "request"), who, textfmt.Num(excess))
}

// embeddedBusy is the decision rate above which the embedded Redis's own
// latency shows in a run's figures: miniredis builds a fresh Lua
// interpreter and compiles the script for every EVAL, under one lock, so
// under load it stalls now and then, long enough for a 50ms policy timeout
// to fail open.
const embeddedBusy = 1000

func embeddedNote(f Facts) string {
	if f.EmbeddedRate < embeddedBusy {
		return ""
	}
	return fmt.Sprintf("embedded Redis: %.0f decisions/s; above about %d/s its own latency (a fresh Lua interpreter per EVAL) shows in latency, timeouts and fail-open figures: use redis: spawn or --redis for those", f.EmbeddedRate, embeddedBusy)
}

// stampsNoteAfter is how far the target's decision times must have been
// moved onto rlctl's clock for a report to say so.
const stampsNoteAfter = time.Millisecond

// stampsShiftNote says so when the decision times a target reported did
// not fit rlctl's clock and the analysis moved them: a decision happened
// between its request's send and receive, so a time outside is the
// target's clock being off, and the exactness of the ceiling then rests on
// that shift.
func stampsShiftNote(f Facts) string {
	d := f.Stamps.Shift
	if d > -stampsNoteAfter && d < stampsNoteAfter {
		return ""
	}
	way := "ahead of"
	if d < 0 {
		way, d = "behind", -d
	}
	return fmt.Sprintf("the target's decision times run %v %s rlctl's clock (beyond each request's send and receive): the analysis moved them onto rlctl's clock (one shift for every gateway unless their clocks differ from one another)", d.Round(10*time.Microsecond), way)
}

// unansweredNote says how an http target's errors enter the figures. A
// 5xx, a timeout or a connection lost while waiting may come after the
// limiter admitted and counted the request (the upstream failed, or the
// answer was slow), so its decision is unknown: ceiling_upper counts it as
// possibly allowed, ceiling does not, and the gateway's own log can say.
func unansweredNote(c Claim, f Facts) string {
	if c.Kind != KindHTTP || f.Unanswered == 0 {
		return ""
	}
	return fmt.Sprintf("%d requests reached the gateway but got no deciding answer (a 5xx, a timeout or a connection lost while waiting): the limiter may have admitted and counted some of them, so ceiling_upper counts them as possibly allowed and ceiling does not; the gateway's own log can tell, or require errors == 0", f.Unanswered)
}

// formNames says what each rate-limit header family is, for notes.
var formNames = map[string]string{
	"retry-after": "Retry-After",
	"draft-11":    "the draft-11 RateLimit and RateLimit-Policy Structured Fields",
	"draft-07":    "draft 07's RateLimit dictionary",
	"draft-06":    "the draft-06 RateLimit-Limit/-Remaining/-Reset fields",
	"x-ratelimit": "the legacy X-RateLimit-* fields",
}

// formsNote says which rate-limit header fields the target answered with.
func formsNote(forms []string) string {
	var names []string
	for _, f := range forms {
		if n, ok := formNames[f]; ok {
			names = append(names, n)
		} else {
			names = append(names, f)
		}
	}
	return "the target's answers carried " + strings.Join(names, ", ")
}

// retryNote says how the retrying clients fared, in the retry figures'
// own words.
func retryNote(policy string, m map[string]float64, limit float64) string {
	var parts []string
	if v, ok := m[metric.HerdPeak]; ok {
		parts = append(parts, fmt.Sprintf("the most requests of one identity within %s after a reset was %g (%.2g× the limit)", metric.HerdSpan, v, v/limit))
	}
	if v, ok := m[metric.Relimited]; ok {
		parts = append(parts, fmt.Sprintf("%.0f%% of retries were denied again", 100*v))
	}
	if v, ok := m[metric.RetryWaitExcess]; ok {
		parts = append(parts, fmt.Sprintf("an admitted retry came back on average %.3gms after the quota was seen back", v))
	}
	if v, ok := m[metric.RetryAfterEarly]; ok {
		parts = append(parts, fmt.Sprintf("%.0f%% of the retries that waited exactly what they were told were denied with nothing admitted meanwhile (an early hint)", 100*v))
	}
	if len(parts) == 0 {
		return "clients retried denied requests (" + policy + "); no retry was answered"
	}
	return "clients retried denied requests (" + policy + "): " + strings.Join(parts, "; ")
}

// bucketNote says what a bucket's figures mean: within its envelope
// (capacity C refilled at L per W, up to C+L−1 in one window) that is the
// design, not a leak; beyond it, requests slipped and it is a leak.
func bucketNote(c Claim, m map[string]float64) string {
	L := float64(c.Limit.Count)
	C := c.EnvelopeBurst
	if C <= 0 {
		C = L
	}
	slipped := m[metric.Slipped]
	if slipped <= 0 {
		return fmt.Sprintf("a bucket of capacity %s refilled at %s per %s admits up to %s in one sliding window: that is its envelope (burst + sustained rate), not a leak", textfmt.Num(C), textfmt.Num(L), c.Limit.Window, textfmt.Num(C+L-1))
	}
	measuredAs := ""
	if rate, ok := m[metric.SustainedRate]; ok { // a run of two windows or more
		measuredAs = fmt.Sprintf(" (measured burst %s, sustained %s/s)", textfmt.Num(m[metric.Burst]), textfmt.Num(rate))
	}
	return fmt.Sprintf("%s slipped beyond the envelope a bucket of capacity %s refilled at %s per %s can admit%s: a leak, not the envelope", textfmt.Count(slipped, "request"), textfmt.Num(C), textfmt.Num(L), c.Limit.Window, measuredAs)
}

// failoverNotes say what a failover did, in the failover figures' own
// words.
func failoverNotes(c Claim, m map[string]float64) []string {
	if _, ok := m[metric.ElectionMs]; !ok {
		return nil
	}
	var out []string
	L := float64(c.Limit.Count)
	if v := m[metric.CountsLost]; v > 0 {
		out = append(out, fmt.Sprintf("the new primary lacked %s the old one held just before the failover: each identity's quota began again", textfmt.Count(v, "count")))
	}
	if v, ok := m[metric.AfterFaultCeiling]; ok && v > L && v != m[metric.Ceiling] {
		// (when it is the run's ceiling, the ceiling's note says it)
		out = append(out, fmt.Sprintf("across the failover one identity had %s admitted within %s: %s the published %s", textfmt.Num(v), c.Limit.Window, textfmt.Ratio(v/L), textfmt.Num(L)))
	}
	if e, o, cl := m[metric.ElectionErrors], m[metric.ElectionFailOpen], m[metric.ElectionFailClosed]; e+o+cl > 0 {
		out = append(out, fmt.Sprintf("while the primary changed (%sms from the failover): %s, %s admitted fail-open, %s refused fail-closed",
			textfmt.Num(m[metric.ElectionMs]), textfmt.Count(e, "error"), textfmt.Num(o), textfmt.Num(cl)))
	}
	if v := m[metric.FailoverDenied]; v > 0 {
		out = append(out, fmt.Sprintf("the gateways detected the failover %sms after it began and refused %s for it over %sms (on_failover: deny)",
			textfmt.Num(m[metric.FailoverDetectMs]), textfmt.Count(v, "request"), textfmt.Num(m[metric.FailoverDenyMs])))
	}
	return out
}

// embeddedSlow says that slow answers of the embedded Redis, which runs in
// rlctl's process, are rlctl's own slowness.
const embeddedSlow = "which answers inside rlctl: rlctl's own process was too slow (its own CPU or scheduling)"

// dropCause says in a few words why requests were dropped; embedded says
// the answers came from the embedded Redis.
func dropCause(d Drops, embedded bool) string {
	switch {
	case d.SlowTarget && embedded:
		return "every worker was waiting on the embedded Redis, " + embeddedSlow + ", not a target"
	case d.SlowTarget:
		return "every worker was waiting on a slow answer"
	}
	return "rlctl could not keep up (its own CPU or scheduling)"
}

// dropNote says why requests were dropped: the workers all waited on slow
// answers (the target, or rlctl itself when the embedded Redis gave them:
// embedded), or rlctl could not keep up (itself).
func dropNote(d Drops, embedded bool) string {
	if d.SlowTarget && embedded {
		return fmt.Sprintf("%s dropped: every worker was waiting on the embedded Redis (%sms on average at %.0f/s offered), %s, not a target", wereDropped(d.Dropped), textfmt.Num(float64(d.Service.Microseconds())/1000), d.Rate, embeddedSlow)
	}
	if d.SlowTarget {
		waiting := "all " + textfmt.Count(d.Workers, "worker") + " were waiting"
		if d.Workers == 1 {
			waiting = "the one worker was waiting"
		}
		return fmt.Sprintf("%s dropped: %s on answers (%sms on average at %.0f/s offered, so %.0f would have to be in flight): the target was slow, not rlctl", wereDropped(d.Dropped), waiting, textfmt.Num(float64(d.Service.Microseconds())/1000), d.Rate, d.Rate*d.Service.Seconds())
	}
	return fmt.Sprintf("%s dropped: no worker was free at the scheduled time while answers came back in %sms on average (rlctl, not the limiter, was the bottleneck for those: its own CPU or scheduling)", wereDropped(d.Dropped), textfmt.Num(float64(d.Service.Microseconds())/1000))
}

// wereDropped is "1 request was" or "12 requests were".
func wereDropped(n int64) string {
	if n == 1 {
		return "1 request was"
	}
	return textfmt.Count(n, "request") + " were"
}

// sendLagNoteMs is the send lag (p99, ms) from which a report says that
// rlctl's own delay, not the target's, makes up much of the latency.
const sendLagNoteMs = 1

// timingBoundNotes say which passed thresholds hold on a lower bound only:
// read with its upper bound (metric.UpperOf) in its place, the threshold
// fails, so the answers' timing left the claim unsettled (a gap wide
// enough to void the figure fails the settled check instead). A run not
// measured gets none: its thresholds decide nothing.
func timingBoundNotes(c Claim, f Facts, v Verdict) []string {
	if v.Status == StatusError {
		return nil
	}
	var out []string
	for _, u := range unsettledClaims(c, f) {
		if !u.holdsSurely {
			continue
		}
		out = append(out, fmt.Sprintf("%s holds on %s %s, what surely happened; counting also the admissions that may have been decided inside what it counts (their [sent, received] span crosses its edge), %s is %s, which would not hold: the answers' timing leaves the claim unsettled (decision stamps from the target, or quicker answers, settle it)",
			u.expr, u.lower, textfmt.Num(f.Metrics[u.lower]), u.upper, textfmt.Num(f.Metrics[u.upper])))
	}
	return out
}

// unsettled is a threshold whose outcome turns on which of its figure's
// bounds is read: what surely happened (lower) or what may have (upper).
type unsettled struct {
	expr         string
	lower, upper string
	// holdsSurely says the threshold holds on the lower bound and fails
	// on the upper one (a cap); otherwise it is the other way round.
	holdsSurely bool
}

// unsettledClaims lists c's thresholds that hold read with one bound of
// a figure (metric.UpperOf) and fail read with the other.
func unsettledClaims(c Claim, f Facts) []unsettled {
	ths, _ := claimOf(c)
	var out []unsettled
	for _, th := range ths {
		_, surely, err := th.Eval(f.Metrics, c.Limit)
		if err != nil {
			continue
		}
		for _, side := range []*threshold.Operand{&th.Left, &th.Right} {
			upper, ok := metric.UpperOf[side.Name]
			if !ok {
				continue
			}
			alt := th
			if side == &th.Left {
				alt.Left.Name = upper
			} else {
				alt.Right.Name = upper
			}
			if _, maybe, err := alt.Eval(f.Metrics, c.Limit); err == nil && maybe != surely {
				out = append(out, unsettled{expr: th.Expr, lower: side.Name, upper: upper, holdsSurely: surely})
			}
		}
	}
	return out
}
