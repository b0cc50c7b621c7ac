package score

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/textfmt"
	"github.com/rlctl/rlctl/internal/threshold"
)

// Check is one precondition a measurement needs before any threshold
// counts: a run that fails it did not measure what its scenario claims,
// so its verdict is "not measured", whatever the thresholds say.
type Check struct {
	// Name names the check in report.json ("answered").
	Name string
	// Needs says what the measurement needs, for rlctl help verdicts.
	Needs string
	// Code is the exit code a run failing it calls for.
	Code exitcode.Code
	// codeOf, when set, picks the code by what the run met instead.
	codeOf func(c Claim, f Facts) exitcode.Code
	// NoteOnly marks a check whose failure weakens the figures without
	// voiding them: its reason becomes a note, and the verdict stands.
	NoteOnly bool
	// test returns why the run fails the check ("" when it holds) and
	// whether the check applies to the run at all.
	test func(c Claim, f Facts) (why string, applies bool)
	// busy, when set, reports whether a run failing the check failed it
	// because rlctl itself was too busy to measure (its own CPU or
	// scheduling, the embedded Redis inside it included), not because of
	// the target (CheckResult.Busy).
	busy func(c Claim, f Facts) bool
	// late, when set, reports whether a run failing the check failed it
	// because the answers came late (CheckResult.Late).
	late func(c Claim, f Facts) bool
	// again, when set, reports whether a run failing the check failed it
	// because of the machines it used, other than rlctl's own load (a
	// clock stepped), so it may measure when run again (CheckResult.Again,
	// which busy implies).
	again func(c Claim, f Facts) bool
}

// always marks every failure of a check: the busy of one only rlctl's own
// slowness can fail, the again of one only the machines can.
func always(Claim, Facts) bool { return true }

// Checks is the validity table, in the order a run is checked: the first
// check a run fails gives its verdict's reason and exit code, and the
// checks after it are not tried (they would only repeat it).
var Checks = []Check{
	{Name: "complete", Code: exitcode.Interrupted,
		Needs: "The run went to its end: an interrupted run's figures cover only what ran, and its thresholds are not judged.",
		test:  complete},
	{Name: "released", Code: exitcode.Unreachable,
		Needs: "The run left its Redis answering: a user's script that rlctl's own call timed out on was stopped (SCRIPT KILL); one that had written cannot be, and its server answers BUSY to every client until it ends.",
		test:  released},
	{Name: "faulted", Code: exitcode.Failed,
		Needs: "Every planned fault was carried out: a failover, stall, reset or outage that the deployment refused, or that failed half way, leaves figures of a run without it, which prove nothing about surviving it; a real failover counts once a new primary took a write, before the run ended.",
		test:  faulted},
	{Name: "claimed", Code: exitcode.Usage,
		Needs: "The scenario says what it claims: a scenario that shows a flaw names the thresholds that demonstrate it (one that proves a design holds and names none claims its published cap, ceiling <= limit).",
		test:  claimed},
	{Name: "tiled", Code: exitcode.Failed,
		Needs: "A merge's runs together sent the whole plan: a share no segment sent is no pass (two runs of one share, or runs of another plan, are refused before anything is merged, exit 2).",
		test:  tiled},
	{Name: "sent", Code: exitcode.Failed,
		Needs: "Requests were scheduled, and at least one was sent.",
		test:  sent},
	{Name: "steady-clock", Code: exitcode.Failed,
		Needs: "This machine's wall clock kept pace with its steady clock while the traffic lasted (rlctl's own gateways and a Redis on this machine, the embedded one included, read the wall clock; rlctl times every figure on the steady clock): moved by more than NTP's slewing does (500 ppm at most; the bound is twice that, and 2ms), it was stepped, and every window keyed on it moved with it, so a figure counted on the steady clock says nothing of the design. The same holds of the target's Redis clock (TIME, read as the traffic starts and once it is over), beyond what the readings' round trips leave uncertain: a Redis on another machine may be stepped alone (not read when a failover hands the gateways to another server, whose clock is its own). Not checked for an http target, whose gateways may keep their own clock.",
		test:  steadyClock, again: always},
	{Name: "classified", Code: exitcode.Failed,
		Needs: "The target's answers can be read: answers that are neither an admission (2xx) nor a denial (denied_status), such as redirects, are within max_error_rate.",
		test:  classified},
	{Name: "answered", Code: exitcode.Unreachable,
		Needs: "Answers came back: at least one request sent got an admission or a denial.",
		test:  answered},
	{Name: "decided", Code: exitcode.Unreachable,
		Needs: "The limiter decided: requests without a deciding answer (errors, or a failure policy answering because Redis failed outside the planned faults) are within max_error_rate (exit 1 when an http target's answers were errors of its own, or the embedded Redis, which answers inside rlctl, was too slow: rlctl's own slowness).",
		test:  decided, codeOf: decidedCode, busy: embeddedSilent},
	{Name: "executed", Code: exitcode.Failed,
		Needs: "The plan was executed: the share of its requests dropped (no worker free at its time) is within max_error_rate (exit 3 when every worker was waiting on a slow target; on the embedded Redis, which answers inside rlctl, that is rlctl's own slowness: exit 1).",
		test:  executed, codeOf: executedCode, busy: rlctlDropped, late: slowDropped},
	{Name: "admitted", Code: exitcode.Failed,
		Needs: "Something was admitted: a limiter that admitted nothing has not been shown to hold at the published limit.",
		test:  admitted},
	{Name: "pressed", Code: exitcode.Failed,
		Needs: "The limit was reached where the claim caps what the limiter admitted (ceiling, boundary_allowed, after_fault_ceiling, burst, sustained_rate, slipped or race_excess held at most to a bound): the limiter denied at least one request. In a run it denied nothing in, everything offered was admitted, so a cap that held, held on the traffic alone, as it would with no limiter at all.",
		test:  pressed},
	{Name: "straddled", Code: exitcode.Failed,
		Needs: "The boundary pattern fired a shot and straddled a window edge the target rolled: its shots were aimed at an edge learned precisely enough from the target's answers (or set by align: epoch), with at least half of the requests aimed before the edge decided before it, or the answers show the window rolling between them.",
		test:  straddled, busy: embeddedLate, late: answeredLate},
	{Name: "concurrent", Code: exitcode.Failed,
		Needs: "The race pattern raced: in at least a tenth of its releases (one identity's request through every gateway at once), and in one at least, two requests were in flight at one instant (the second sent before the first answered), so their checks could interleave; a note says how many did when not all.",
		test:  concurrent, busy: always},
	{Name: "kept-time", Code: exitcode.Failed,
		Needs: "rlctl kept the schedule where a figure rests on it: 99% of its requests left less late than the boundary shots' span, or herd_peak's 100ms: sent later, the shots miss the edge and the herd spreads by rlctl's own delay, not the target's; and every latency threshold (latency counts from the schedule) has the same outcome counted from when requests really left (the ceiling's bounds come from when requests really left, so lag does not void them).",
		test:  keptTime, busy: always},
	{Name: "noticed", Code: exitcode.Failed,
		Needs: "rlctl's own gateways (simulated, or running your script) that deny after a failover noticed an emulated one (no election: on the embedded Redis, or staged on a Redis given by URL) on time: within one and a half of their marker-read interval (75ms), as they do on an idle machine, plus six of the Redis's round trips (p50 from send: a reconnection with its handshakes, the marker read and the refused request; none on the embedded Redis, inside rlctl); noticed later, the gateways' reads waited on rlctl's own CPU, and what went through meanwhile is rlctl's slowness, not the design's.",
		test:  noticed, busy: always},
	{Name: "covered", Code: exitcode.Failed,
		Needs: "A cap on what a fault let through (after_fault_ceiling or its shard forms held at most to a bound) saw all of it: the traffic ran until one window after each fault ended (a real failover ends when the new primary took its first write and an old primary still taking writes was demoted; one whose new primary took none in the run never ended). What a fault lets through spills into the window after it; cut shorter, a cap held on the part that was seen.",
		test:  covered},
	{Name: "measured", Code: exitcode.Failed,
		Needs: "Every threshold's figure was measured: a threshold on one the run did not produce (after_fault_ceiling without a fault, race_excess without the race pattern, counts_lost where the counters could not be read) can neither hold nor fail, so its claim was not measured.",
		test:  thresholdsMeasured},
	{Name: "settled", Code: exitcode.Failed,
		Needs: "The answers placed each figure a threshold turns on: where a figure is counted between bounds (ceiling, boundary_allowed, after_fault_ceiling: what surely happened, and what may have, an answer's [sent, received] crossing the edge of what it counts) and the threshold holds on one bound and fails on the other, what surely happened is at least half of what may have; answers slower than what the figure counts (the boundary shots' span) leave it resting on their timing, not the target's. A nearer call is judged on what surely happened, with a note.",
		test:  settled, busy: embeddedAnswered, late: always},
	{Name: "stamps", NoteOnly: true,
		Needs: "The target's own decision times (Redis TIME, X-RateLimit-Decided-At) fit each request's send and receive once moved onto rlctl's clock; where they do not, they are ignored, with a note, and the ceiling's bounds come from send and receive.",
		test:  stamps},
}

// CheckResult is one check's outcome for a run, in report.json's form.
type CheckResult struct {
	Name string `json:"name"`
	// Held is false when the run failed the check.
	Held   bool   `json:"held"`
	Reason string `json:"reason,omitempty"`
	// Busy marks a check failed because rlctl itself was too busy to
	// measure (its own CPU or scheduling), not because of the target: the
	// same scenario on a quieter machine, or at a lower rate, may measure.
	Busy bool `json:"busy,omitempty"`
	// Again marks a check that the machines the run used failed, not the
	// design or the scenario: rlctl was too busy (Busy), or a clock was
	// stepped (this machine's, or its Redis's). The same scenario run
	// again may measure.
	Again bool `json:"again,omitempty"`
	// Late marks a check failed because the answers came too late for
	// the figure (a boundary shot decided after its edge, a figure most
	// of whose admissions could not be placed): the target's slowness,
	// or rlctl's own when Busy. A target that answers quickly on a quiet
	// machine (a loopback server) may measure on a quieter one.
	Late bool `json:"late,omitempty"`
}

// settled fails a run whose claim turns on a figure whose lower bound is
// under half its upper bound: most of what it may count could not be
// placed, so its threshold's outcome is the answers' timing.
func settled(c Claim, f Facts) (string, bool) {
	applies := false
	ths, _ := claimOf(c)
	for _, th := range ths {
		for _, name := range []string{th.Left.Name, th.Right.Name} {
			if _, ok := f.Metrics[metric.UpperOf[name]]; ok {
				applies = true
			}
		}
	}
	var why []string
	for _, u := range unsettledClaims(c, f) {
		lower, upper := f.Metrics[u.lower], f.Metrics[u.upper]
		if 2*lower >= upper {
			continue
		}
		way := "holds on " + u.lower + " " + textfmt.Num(lower) + ", what surely happened, and fails on " + u.upper + " " + textfmt.Num(upper)
		if !u.holdsSurely {
			way = "fails on " + u.lower + " " + textfmt.Num(lower) + ", what surely happened, and holds on " + u.upper + " " + textfmt.Num(upper)
		}
		slower := "what the figure counts"
		if u.lower == metric.BoundaryAllowed && len(f.Boundaries) > 0 {
			slower = fmt.Sprintf("the boundary shots' ±%v span", f.Boundaries[0].Span)
		}
		why = append(why, fmt.Sprintf("%s %s, what may have: under half of the admissions it may count were surely inside it, the answers having come slower than %s, so their timing, not the target, decides the claim",
			u.expr, way, slower))
	}
	if len(why) > 0 && embeddedAnswered(c, f) {
		why = append(why, "the late answers came from the embedded Redis, "+embeddedSlow)
	}
	return strings.Join(why, "; "), applies
}

// embeddedAnswered reports whether the run's answers came from the
// embedded Redis, inside rlctl, so their lateness is rlctl's own.
func embeddedAnswered(c Claim, f Facts) bool { return f.Embedded && c.Kind != KindHTTP }

func complete(c Claim, f Facts) (string, bool) {
	if !f.Interrupted {
		return "", true
	}
	return fmt.Sprintf("interrupted after %s of %s: the figures cover only what ran, and its thresholds were not judged",
		f.Ran.Round(10*time.Millisecond), f.Planned), true
}

func released(c Claim, f Facts) (string, bool) {
	if c.Kind != KindRedisScript {
		return "", false
	}
	return f.Stuck, true
}

func faulted(c Claim, f Facts) (string, bool) {
	if f.Faults == 0 && len(f.Unapplied) == 0 {
		return "", false
	}
	return strings.Join(f.Unapplied, "; "), true
}

func thresholdsMeasured(c Claim, f Facts) (string, bool) {
	ths, _ := claimOf(c)
	var why []string
	for _, t := range Thresholds(ths, f.Metrics, c.Limit) {
		if t.Error != "" {
			why = append(why, t.Expr+": "+t.Error)
		}
	}
	return strings.Join(why, "; "), len(ths) > 0
}

func claimed(c Claim, f Facts) (string, bool) {
	if c.Shows == design.ShowsFlaw && len(c.Thresholds) == 0 {
		return "the scenario shows a flaw (shows: flaw) but names no threshold that demonstrates it: nothing was claimed", true
	}
	return "", true
}

func tiled(c Claim, f Facts) (string, bool) {
	if f.Merge == nil {
		return "", false
	}
	if f.Merge.Missing == "" {
		return "", true
	}
	var have []string
	for _, s := range f.Merge.Runs {
		have = append(have, segmentName(s))
	}
	return fmt.Sprintf("the merged runs sent %s of the plan and none sent %s: part of a plan is no pass (merge the run of every segment)",
		strings.Join(have, ", "), f.Merge.Missing), true
}

// String is the segment as a reader knows it: "segment 0/2", or "the
// whole plan".
func (s Segment) String() string {
	if s.Name == "" {
		return "the whole plan"
	}
	return "segment " + s.Name
}

// segmentName is the segment in messages: its Label when set.
func segmentName(s Segment) string {
	if s.Label != "" {
		return s.Label
	}
	return s.String()
}

func counts(f Facts) (total, dropped, sent, answered int64) {
	m := f.Metrics
	total, dropped = int64(m[metric.Requests]), int64(m[metric.Dropped])
	return total, dropped, total - dropped, int64(m[metric.Allowed] + m[metric.Denied])
}

func sent(c Claim, f Facts) (string, bool) {
	total, dropped, sent, _ := counts(f)
	switch {
	case total == 0:
		return "no request was scheduled: nothing was measured", true
	case sent == 0:
		return fmt.Sprintf("no request was sent: all %d were dropped (no worker was free at its time), so nothing was measured", dropped), true
	}
	return "", true
}

func executed(c Claim, f Facts) (string, bool) {
	total, dropped, _, _ := counts(f)
	if total == 0 {
		return "", false
	}
	if share := float64(dropped) / float64(total); share > c.MaxErrorRate {
		why := fmt.Sprintf("%s of the plan's %d requests (%s) were dropped, no worker being free at their time, above max_error_rate %s: the run did not send the load its scenario plans",
			textfmt.Num(float64(dropped)), total, textfmt.Percent(share), textfmt.Percent(c.MaxErrorRate))
		if f.Drops != nil {
			why += "; " + dropCause(*f.Drops, f.Embedded)
		}
		return why, true
	}
	return "", true
}

// executedCode is the exit code a failed "executed" check calls for: a
// target too slow for the plan kept every worker waiting (as an
// unreachable one does), else rlctl could not keep up, the embedded Redis
// being part of rlctl.
func executedCode(c Claim, f Facts) exitcode.Code {
	if rlctlDropped(c, f) {
		return exitcode.Failed
	}
	return exitcode.Unreachable
}

// rlctlDropped reports whether requests were dropped for rlctl's own
// slowness: it could not keep up, or its workers waited on the embedded
// Redis, which answers inside it.
func rlctlDropped(c Claim, f Facts) bool {
	return f.Drops == nil || !f.Drops.SlowTarget || f.Embedded
}

// slowDropped reports whether the plan's requests were dropped because
// every worker was waiting on answers: they came too late for the plan
// (the target's, or the embedded Redis's inside rlctl, then busy too).
func slowDropped(c Claim, f Facts) bool {
	return f.Drops != nil && f.Drops.SlowTarget
}

func firstErrors(f Facts) string {
	if len(f.FirstErrors) == 0 {
		return ""
	}
	return "; first errors: " + strings.Join(f.FirstErrors, "; ")
}

// maxWallRate is how fast the wall clock may run against the steady one,
// as a fraction: twice the 500 ppm NTP slews at, at most.
const maxWallRate = 0.001

// steadyClock fails a run of rlctl's own gateways during which this
// machine's wall clock, or the target's Redis clock, moved against this
// machine's steady clock by more than slewing explains (and 2ms): a step,
// or a VM catching its clock up.
func steadyClock(c Claim, f Facts) (string, bool) {
	if c.Kind == KindHTTP || f.Ran <= 0 {
		return "", false
	}
	if stepped(f.WallMoved, f.Ran) {
		return fmt.Sprintf("this machine's wall clock moved %s against its steady clock over the run's %s (%s): "+
			"stepped, or caught up by its VM, it moved the windows of the limiters here that read it (Redis TIME, the embedded Redis, rlctl's own gateways), "+
			"so what was counted on the steady clock says nothing of the design; run it again once the clock is steady",
			movedWay(f.WallMoved), f.Ran.Round(time.Millisecond), movedRate(f.WallMoved, f.Ran)), true
	}
	if stepped(f.RedisMoved, f.Ran) {
		return fmt.Sprintf("the target's Redis clock (TIME) moved at least %s against this machine's steady clock over the run's %s (%s): "+
			"stepped, it moved the windows and the key expiries of the limiters that read it, "+
			"so what was counted on the steady clock says nothing of the design; run it again once that Redis's clock is steady",
			movedWay(f.RedisMoved), f.Ran.Round(time.Millisecond), movedRate(f.RedisMoved, f.Ran)), true
	}
	return "", true
}

// stepped reports whether a clock that moved by moved against the steady
// one over ran moved more than slewing explains, and 2ms.
func stepped(moved, ran time.Duration) bool {
	moved = moved.Abs()
	return moved > 2*time.Millisecond && float64(moved) > maxWallRate*float64(ran)
}

// movedWay says how far and which way a clock moved.
func movedWay(moved time.Duration) string {
	way := "ahead"
	if moved < 0 {
		way = "back"
	}
	return moved.Abs().Round(10*time.Microsecond).String() + " " + way
}

// movedRate says at what rate a clock that moved by moved over ran moved,
// beside the most slewing does.
func movedRate(moved, ran time.Duration) string {
	return fmt.Sprintf("%.0f ppm; NTP's slewing stays within 500", float64(moved.Abs())/float64(ran)*1e6)
}

func answered(c Claim, f Facts) (string, bool) {
	_, _, sent, answered := counts(f)
	if answered > 0 {
		return "", true
	}
	return fmt.Sprintf("nothing answered: all %d requests sent failed, so nothing was measured%s", sent, firstErrors(f)), true
}

// unclassified counts the answers that are neither an admission nor a
// denial nor a server error: informational and redirect statuses, and
// codes outside HTTP's range. Each is an error of the run.
func unclassified(st map[int]int64) (n int64, codes []int) {
	for code, k := range st {
		if code < 200 || (code >= 300 && code < 400) || code > 599 {
			n += k
			codes = append(codes, code)
		}
	}
	slices.Sort(codes)
	return n, codes
}

// statusList names statuses with their counts: "302 Found (120)".
func statusList(st map[int]int64, codes []int) string {
	var parts []string
	for _, code := range codes {
		parts = append(parts, fmt.Sprintf("%d %s (%d)", code, statusText(code), st[code]))
	}
	return strings.Join(parts, ", ")
}

func classified(c Claim, f Facts) (string, bool) {
	if f.Statuses == nil {
		return "", false
	}
	n, codes := unclassified(f.Statuses)
	_, _, sent, _ := counts(f)
	if n == 0 || sent == 0 {
		return "", true
	}
	if share := float64(n) / float64(sent); share > c.MaxErrorRate {
		return fmt.Sprintf("%d answers (%s of those sent) were %s: neither an admission (2xx) nor a denial (denied_status), so they were counted as errors, above max_error_rate %s; rlctl does not follow redirects: point urls at the address that decides, or name a status that means denied in denied_status",
			n, textfmt.Percent(share), statusList(f.Statuses, codes), textfmt.Percent(c.MaxErrorRate)), true
	}
	return "", true
}

// deniedHint suggests denied_status when most of an http target's errors
// were one status a limiter is known to deny with: nginx's limit_req and
// limit_conn answer 503 by default.
func deniedHint(f Facts, errs int64) string {
	if n := f.Statuses[503]; n > 0 && 2*n >= errs {
		return fmt.Sprintf("; %d of them were 503 Service Unavailable, which nginx's limit_req sends for a denial by default: if this gateway denies with 503, set denied_status: [503]", n)
	}
	return ""
}

func undecidedOf(f Facts) (undecided, policy, errs int64) {
	for _, o := range f.Outages {
		undecided += o.Undecided()
		policy += o.FailOpen + o.FailClosed + o.Fallback
		errs += o.Errors
	}
	return undecided, policy, errs
}

func decided(c Claim, f Facts) (string, bool) {
	undecided, policy, errs := undecidedOf(f)
	_, _, sent, _ := counts(f)
	if undecided == 0 || sent == 0 {
		return "", true
	}
	share := float64(undecided) / float64(sent)
	if share <= c.MaxErrorRate {
		return "", true
	}
	if policy > 0 || c.Kind != KindHTTP {
		// The gateways answered, but their failure policy did, not the
		// limiter: Redis could not be reached (or not in time).
		return fmt.Sprintf("%s, outside any planned fault: %s of requests went undecided, above max_error_rate %s; the run measured the outage, not the design%s",
			describeOutages(f.Outages, c, f), textfmt.Percent(share), textfmt.Percent(c.MaxErrorRate), firstErrors(f)), true
	}
	return fmt.Sprintf("%d of %d requests (%s) got no deciding answer, above max_error_rate %s: the figures do not measure the limiter%s%s",
		errs, sent, textfmt.Percent(share), textfmt.Percent(c.MaxErrorRate), deniedHint(f, errs), firstErrors(f)), true
}

// decidedCode is the exit code a failed "decided" check calls for: an
// http target whose own answers were errors failed, one whose Redis
// failed under its gateways was unreachable. The embedded Redis cannot be
// unreachable: it answers inside rlctl, so its silence is rlctl's own.
func decidedCode(c Claim, f Facts) exitcode.Code {
	if _, policy, _ := undecidedOf(f); (policy == 0 && c.Kind == KindHTTP) || (f.Embedded && c.Kind != KindHTTP) {
		return exitcode.Failed
	}
	return exitcode.Unreachable
}

// embeddedSilent reports whether the requests left undecided were rlctl's
// designs on the embedded Redis, whose only way to fail them is to answer
// too slowly: rlctl's own slowness. A user's script may fail on its own.
func embeddedSilent(c Claim, f Facts) bool {
	return f.Embedded && c.Kind != KindHTTP && c.Kind != KindRedisScript
}

// undecider is what did not decide when requests went undecided, and why:
// a Redis at maxmemory under noeviction refuses every write with OOM,
// which reads like any outage unless the errors name it.
func undecider(c Claim, f Facts) (what, why string) {
	if c.Kind == KindHTTP {
		return "the target", "unreachable, failing or slower than the timeout"
	}
	for _, e := range f.FirstErrors {
		if strings.Contains(e, "OOM ") {
			return "Redis", "out of memory (maxmemory reached under noeviction: it refused every write)"
		}
	}
	return "Redis", "unreachable, failing or slower than the timeout"
}

// describeOutages says in one sentence when the limiter did not decide,
// why, and what answered instead: "Redis did not decide: … at
// t=1.20s–3.40s (812 failed open, 3 errors)".
func describeOutages(os []Outage, c Claim, f Facts) string {
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
		spans = append(spans, fmt.Sprintf("t=%s–%s (%s)", secs(o.From), secs(o.To), strings.Join(what, ", ")))
	}
	at := strings.Join(spans, ", ")
	switch {
	case f.Embedded && c.Kind == KindRedisScript:
		// The user's script can fail on its own; rlctl's designs cannot.
		return fmt.Sprintf("the embedded Redis did not decide at %s: the script failed, or it answered slower than the timeout, %s", at, embeddedSlow)
	case f.Embedded && c.Kind != KindHTTP:
		return fmt.Sprintf("the embedded Redis did not decide in time at %s, %s", at, embeddedSlow)
	}
	who, why := undecider(c, f)
	return fmt.Sprintf("%s did not decide: %s at %s", who, why, at)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func admitted(c Claim, f Facts) (string, bool) {
	if f.Metrics[metric.Allowed] > 0 {
		return "", true
	}
	_, _, _, answered := counts(f)
	return fmt.Sprintf("nothing was admitted: all %d answers were denials, so the limiter was never seen admitting; a limit that admits nothing has not been shown to hold at %s",
		answered, c.Limit), true
}

// afterFault are the figures of what a fault let through.
var afterFault = map[string]bool{
	metric.AfterFaultCeiling: true, metric.AfterFaultCeilingUpper: true,
	metric.FailedShardAfterFaultCeiling: true, metric.FailedShardAfterFaultCeilingUpper: true,
	metric.OtherShardsAfterFaultCeiling: true, metric.OtherShardsAfterFaultCeilingUpper: true,
}

// capped are the figures of what the limiter admitted, those of what a
// fault let through among them: a claim that holds one of them at most
// to a bound (capOf) says the limiter held it there.
var capped = func() map[string]bool {
	m := maps.Clone(afterFault)
	for _, name := range []string{metric.Ceiling, metric.CeilingUpper, metric.CeilingRatio, metric.BoundaryAllowed,
		metric.BoundaryAllowedUpper, metric.Burst, metric.SustainedRate, metric.Slipped, metric.RaceExcess} {
		m[name] = true
	}
	return m
}()

// capOf reports whether th holds one of figures at most to a bound
// ("ceiling <= limit", "limit >= ceiling", "slipped == 0"): for a figure
// of what the limiter admitted (capped), low traffic alone satisfies it.
func capOf(th threshold.Threshold, figures map[string]bool) bool {
	atMost := func(side threshold.Operand, ops ...threshold.Op) bool {
		return figures[side.Name] && side.Factor > 0 && slices.Contains(ops, th.Op)
	}
	return atMost(th.Left, threshold.Less, threshold.LessEqual, threshold.Equal) ||
		atMost(th.Right, threshold.Greater, threshold.GreaterEqual, threshold.Equal)
}

// heldCaps counts the thresholds of ths that hold one of figures at most
// to a bound (capOf), and lists those that held, leaving out the ones in
// skip.
func heldCaps(ths []threshold.Threshold, figures map[string]bool, c Claim, f Facts, skip map[string]bool) (caps int, held []string) {
	for _, th := range ths {
		if !capOf(th, figures) {
			continue
		}
		caps++
		if _, pass, err := th.Eval(f.Metrics, c.Limit); err == nil && pass && !skip[th.Expr] {
			held = append(held, th.Expr)
		}
	}
	return caps, held
}

// pressed fails a run whose cap held, on what may have been admitted too,
// while the limiter denied nothing: every request offered was admitted, so
// none of its counters reached its limit and the cap says nothing of the
// limiter. A cap that failed is a measurement (more was admitted than it
// allows), and so is a flaw shown.
func pressed(c Claim, f Facts) (string, bool) {
	ths, _ := claimOf(c)
	// A cap that held on what surely happened and fails counting also
	// what may have been admitted inside it was reached (a boundary
	// shot's 2L answered late): its timing is the settled check's.
	reached := map[string]bool{}
	for _, u := range unsettledClaims(c, f) {
		reached[u.expr] = true
	}
	caps, held := heldCaps(ths, capped, c, f, reached)
	if len(held) == 0 || f.Metrics[metric.Denied]-f.Metrics[metric.FailClosed] > 0 {
		return "", caps > 0
	}
	_, _, _, answered := counts(f)
	return fmt.Sprintf("the limiter denied none of the %d requests answered, so none of its counters reached its limit (%s): %s held on the traffic alone, as it would with no limiter at all; offer more than a counter allows (a higher rate, fewer identities, or for counters kept in each gateway, more through each one)",
		answered, c.Limit, strings.Join(held, " and ")), true
}

// covered fails a run whose cap on what a fault let through held while
// the traffic stopped before one window after a fault's end: the excess a
// fault lets through (counts a promoted replica lacks, a window reopened
// after an outage) comes in the window after it.
func covered(c Claim, f Facts) (string, bool) {
	ths, _ := claimOf(c)
	_, held := heldCaps(ths, afterFault, c, f, nil)
	if len(held) == 0 {
		return "", false
	}
	w := c.Limit.Window
	for _, ft := range f.Applied {
		end := ft.End()
		switch {
		case ft.unended():
			return fmt.Sprintf("%s held, but the %s at %s never ended in the run (the new primary took no write before the traffic stopped), so what it let through afterwards was not seen",
				strings.Join(held, " and "), ft.Action, ms(ft.At)), true
		case f.Ran < end+w:
			stopped := fmt.Sprintf("before the %s at %s ended", ft.Action, ms(ft.At))
			if f.Ran > end {
				stopped = fmt.Sprintf("%s after the %s at %s ended", ms(f.Ran-end), ft.Action, ms(ft.At))
			}
			return fmt.Sprintf("%s held, but the traffic stopped %s, short of the window (%s) after it in which what a fault lets through is spent: run the traffic until at least %s",
				strings.Join(held, " and "), stopped, ms(w), ms(end+w)), true
		}
	}
	return "", true
}

// ms is d to the millisecond, as reasons say a time.
func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// straddles reports whether shot b is shown to straddle the target's
// window edge: the answers show the window rolling between its halves, or
// the edge it aimed at is known to within its span and at least half of
// the shot aimed before it was decided before it.
func (b Boundary) straddles() bool {
	return b.fresh() && (b.Rolled || (b.aimed() && b.early()))
}

// fresh reports whether the shot before the edge met the fresh quota the
// pattern leaves it: at least half of its answered requests admitted. A
// window seen rolling after a before-shot mostly denied rolled on a quota
// already spent, and its figure is no boundary's.
func (b Boundary) fresh() bool { return b.Before == 0 || 2*b.AdmittedBefore >= b.Before }

// aimed reports whether the edge b aimed at is known to within its span.
func (b Boundary) aimed() bool { return b.Uncertainty >= 0 && b.Uncertainty <= b.Span }

// early reports whether at least half of the requests b aimed before the
// edge were decided before it; a shot whose answers came too late for that
// fell in one window, and one with no answer before the edge has no early
// side at all.
func (b Boundary) early() bool { return b.Before > 0 && 2*b.Early >= b.Before }

func straddled(c Claim, f Facts) (string, bool) {
	if len(f.Boundaries) == 0 && f.BoundaryPattern && !f.Interrupted {
		ran := f.Planned
		if ran <= 0 {
			ran = f.Ran
		}
		return fmt.Sprintf("the boundary pattern fired no shot in %s of traffic: before each one it finds a window edge and leaves the window before it idle, and the run ended first, so nothing straddled a boundary (three windows, %s, leave it room)",
			ran.Round(10*time.Millisecond), 3*c.Limit.Window), true
	}
	recorded := slices.ContainsFunc(f.Boundaries, func(b Boundary) bool { return b.Aim != "" })
	if !recorded {
		// No shots, or a history saved before shots recorded their aim.
		return "", false
	}
	n := 0
	for _, b := range f.Boundaries {
		if b.straddles() {
			n++
		}
	}
	if n > 0 {
		return "", true
	}
	why := fmt.Sprintf("none of the %s was shown to straddle a window edge of the target (%s), so boundary_allowed counts what one window admitted, not a boundary",
		textfmt.Count(len(f.Boundaries), "boundary shot"), aimWhy(f.Boundaries[0]))
	if embeddedLate(c, f) {
		why += "; the late answers came from the embedded Redis, " + embeddedSlow
	}
	return why, true
}

// answeredLate reports whether the boundary shots fell in one window
// because their answers came late: the edge was known, but most of the
// shot aimed before it that was answered was decided after it.
func answeredLate(c Claim, f Facts) bool {
	b, late := lateShot(f)
	return late && b.Before > 0
}

// embeddedLate reports whether the boundary shots fell in one window
// because the embedded Redis, inside rlctl, answered them late (or not
// at all before the edge).
func embeddedLate(c Claim, f Facts) bool {
	_, late := lateShot(f)
	return late && f.Embedded
}

// lateShot is the run's first boundary shot, and whether its edge was
// known but fewer than half of the requests aimed before it were decided
// before it.
func lateShot(f Facts) (Boundary, bool) {
	if len(f.Boundaries) == 0 {
		return Boundary{}, false
	}
	b := f.Boundaries[0]
	return b, b.aimed() && !b.early()
}

// aimWhy says why a shot's aim is not known to straddle an edge.
func aimWhy(b Boundary) string {
	switch {
	case !b.fresh():
		return fmt.Sprintf("only %d of the %d requests aimed before the edge were admitted, so the quota before it was already spent (a window used up, or a bucket holding less than half the limit), not the fresh one the pattern leaves there, and the shot measured no boundary", b.AdmittedBefore, b.Before)
	case b.aimed() && b.Before == 0:
		return fmt.Sprintf("the edge was known to within %v, but none of the requests aimed before it was answered", b.Uncertainty.Round(time.Millisecond))
	case b.aimed() && !b.early():
		return fmt.Sprintf("the edge was known to within %v, but only %d of the %d requests aimed before it were decided before it (their answers came late), so the shots fell in one window, and the window never showed rolling between them", b.Uncertainty.Round(time.Millisecond), b.Early, b.Before)
	case b.Uncertainty < 0:
		return "no edge could be learned from its answers, so the shots went to epoch-aligned boundaries it may not use, and no admission after a denial showed one"
	default:
		return fmt.Sprintf("the edge was learned only to within %v, more than the ±%v span of the shots, and no admission after a denial showed one", b.Uncertainty.Round(time.Millisecond), b.Span)
	}
}

func concurrent(c Claim, f Facts) (string, bool) {
	if f.Race == nil || f.Race.Releases == 0 {
		return "", false
	}
	if r := f.Race; r.Concurrent == 0 || 10*r.Concurrent < r.Releases {
		return fmt.Sprintf("only %d of %s (one identity's request through every gateway at once) had two requests in flight at one instant: the gateways' checks did not race, so race_excess measures sequential requests",
			r.Concurrent, textfmt.Count(r.Releases, "release")), true
	}
	return "", true
}

// noticeWithin is how long after a failover simulated gateways may take
// to deny for it, besides their Redis's round trips: a marker read every
// FailoverCheckEvery, and half that again for the read and the next
// request.
const noticeWithin = design.FailoverCheckEvery * 3 / 2

// noticeTrips is how many round trips to a Redis outside rlctl a notice
// may take besides: the gateways' clients reconnect to the server the
// failover left them (a dial, and a TLS handshake and HELLO or AUTH:
// up to four), then read the marker and refuse a request.
const noticeTrips = 6

// noticed fails a run whose deny-after-failover gateways, rlctl's own
// (simulated, or running the user's script), noticed an emulated failover
// later than noticeWithin plus noticeTrips of the Redis's round trips
// (none on the embedded Redis, inside rlctl): the requests that went
// through meanwhile are the instrument's delay (after_fault_ceiling), not
// the design's. A real election is not judged: the gateways notice only
// once it is over, as long as the topology and their client take.
func noticed(c Claim, f Facts) (string, bool) {
	detect, ok := f.Metrics[metric.FailoverDetectMs]
	if c.Kind == KindHTTP || !ok || !slices.ContainsFunc(c.Endpoints, func(e Endpoint) bool { return e.OnFailover == design.OnFailoverDeny }) ||
		slices.ContainsFunc(f.Applied, func(a Fault) bool { return a.Stopped > 0 || a.Answered > 0 }) {
		return "", false
	}
	// On a Redis outside rlctl, noticeTrips of its round trips more,
	// counted from when requests really left so rlctl's own send lag does
	// not widen them.
	bound, with, running := float64(noticeWithin.Milliseconds()), "", "them and the embedded Redis"
	if !f.Embedded {
		rt, ok := f.FromSent[metric.P50]
		if !ok {
			rt = f.Metrics[metric.P50]
		}
		bound += noticeTrips * rt
		with, running = fmt.Sprintf(" with %d of this Redis's round trips (p50 %sms from send)", noticeTrips, textfmt.Num(rt)), "the gateways"
	}
	if detect > bound {
		return fmt.Sprintf("the gateways denied for the failover %sms after it, later than the %sms their marker reads take on an idle machine%s: rlctl, running %s, was too busy, and the requests that went through meanwhile are its delay, not the design's",
			textfmt.Num(detect), textfmt.Num(bound), with, running), true
	}
	return "", true
}

// keptTime holds when rlctl's own send lag did not decide a figure that
// rests on the schedule: the boundary shots' and herd_peak's counts
// (keptSpan), and latency thresholds (keptLatency). Other figures rest on
// when requests really left, not on when they were due.
func keptTime(c Claim, f Facts) (string, bool) {
	why, applies := keptSpan(f)
	if why != "" {
		return why, true
	}
	why, latency := keptLatency(c, f)
	return why, applies || latency
}

// keptLatency holds unless a latency threshold's outcome turns on rlctl's
// own send lag. Latency counts from each request's scheduled time, so
// that a target which makes requests wait is charged for it; a threshold
// that holds counted one way and fails counted from when requests really
// left (Facts.FromSent), or the other way round, measured rlctl's delay.
func keptLatency(c Claim, f Facts) (string, bool) {
	if len(f.FromSent) == 0 {
		return "", false
	}
	sent := maps.Clone(f.Metrics)
	maps.Copy(sent, f.FromSent)
	ths, _ := claimOf(c)
	applies := false
	for _, th := range ths {
		_, inLeft := f.FromSent[th.Left.Name]
		_, inRight := f.FromSent[th.Right.Name]
		if !inLeft && !inRight {
			continue // no latency in it
		}
		applies = true
		due, holdsDue, err := th.Eval(f.Metrics, c.Limit)
		if err != nil {
			continue
		}
		left, holdsSent, err := th.Eval(sent, c.Limit)
		if err != nil || holdsDue == holdsSent {
			continue
		}
		return fmt.Sprintf("%s %s at %sms counted from each request's scheduled time but %s at %sms counted from when it really left: rlctl itself sent late (its own CPU or scheduling: the machine was too busy), so its outcome is rlctl's delay, not the target's",
			th.Expr, holdsWord(holdsDue), textfmt.Num(due), holdsWord(holdsSent), textfmt.Num(left)), true
	}
	return "", applies
}

func holdsWord(holds bool) string {
	if holds {
		return "holds"
	}
	return "fails"
}

// keptSpan holds when rlctl's own send lag (p99) stays inside the span a
// pattern's figure counts requests over: the boundary shots', or
// herd_peak's.
func keptSpan(f Facts) (string, bool) {
	lag, ok := f.Metrics[metric.SendLagP99]
	if !ok {
		return "", false
	}
	var span time.Duration
	var what string
	if len(f.Boundaries) > 0 && f.Boundaries[0].Span > 0 {
		span, what = f.Boundaries[0].Span, "the boundary shots' span "+f.Boundaries[0].Span.String()
	}
	if _, herd := f.Metrics[metric.HerdPeak]; herd && (span == 0 || metric.HerdSpan < span) {
		span, what = metric.HerdSpan, "herd_peak's "+metric.HerdSpan.String()
	}
	if span == 0 {
		return "", false
	}
	if lag*float64(time.Millisecond) <= float64(span) {
		return "", true
	}
	return fmt.Sprintf("rlctl itself sent 1%% of requests %sms or more late (its own CPU or scheduling: the machine was too busy), more than %s its figures count over, so they measure rlctl's delay, not the target", textfmt.Num(lag), what), true
}

func stamps(c Claim, f Facts) (string, bool) {
	s := f.Stamps
	if s.Total == 0 {
		return "", false
	}
	if s.Ignored == 0 {
		return "", true
	}
	why := fmt.Sprintf("%d of the target's %d decision times lay outside their request's send and receive once moved onto rlctl's clock", s.Ignored, s.Total)
	if len(s.Untrusted) > 0 {
		why += fmt.Sprintf(" (all of %s's, which disagreed too often to be a clock)", strings.Join(s.Untrusted, ", "))
	}
	return why + ": they were ignored, and the ceiling's bounds for those requests come from send and receive", true
}

// statusTexts name the statuses a reason may quote; score imports no
// network package, so not net/http's table.
var statusTexts = map[int]string{
	100: "Continue", 101: "Switching Protocols", 103: "Early Hints",
	300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other",
	304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect",
	503: "Service Unavailable",
}

func statusText(code int) string {
	if t, ok := statusTexts[code]; ok {
		return t
	}
	return "status"
}
