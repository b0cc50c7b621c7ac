package analysis

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// Conduct is what the analysis found of how the run itself went, beside
// its figures: whether the target's own decision times could be trusted,
// whether the race pattern's requests raced, whether the boundary
// pattern's shots straddled an edge. Score judges by it; the analysis only
// counts.
type Conduct struct {
	// Unanswered counts the errors after the request reached the target
	// (decision.ByUnanswered): admitted or not, nobody said.
	Unanswered int64
	Stamps     Stamps
	Race       RaceConduct
	// Boundaries are the boundary pattern's shots, in Meta order.
	Boundaries []BoundaryShot
	// DeniedFirst counts the identities whose very first request, sent
	// while none other of theirs was in flight, the limiter itself denied:
	// a fresh counter admits that one in every design, so theirs held
	// counts before the run (a previous run's still in the window, a real
	// user's) or is one they share (a client address). Opened counts the
	// identities with a first request answered at all.
	DeniedFirst, Opened int
	// FromSent are the latency figures (p50_ms … max_ms) counted from when
	// each request really left instead of when it was due: the answers'
	// own time, without rlctl's send lag. Empty when nothing was answered.
	FromSent Metrics
}

// opening is an identity's first request: when it was sent and answered,
// whether the limiter itself denied it, and when the identity's next
// request was sent.
type opening struct {
	sent, answered, next  time.Duration
	denied, seen, hasNext bool
}

// add takes a request sent at sent and answered at answered.
func (o *opening) add(sent, answered time.Duration, denied bool) {
	switch {
	case !o.seen:
		*o = opening{sent: sent, answered: answered, denied: denied, seen: true}
	case sent < o.sent:
		o.next, o.hasNext = o.sent, true
		o.sent, o.answered, o.denied = sent, answered, denied
	case !o.hasNext || sent < o.next:
		o.next, o.hasNext = sent, true
	}
}

// deniedAlone reports whether the limiter denied the first request while
// no other request of the identity was in flight.
func (o opening) deniedAlone() bool {
	return o.seen && o.denied && (!o.hasNext || o.next >= o.answered)
}

// limiterDenied reports whether a denial came from the limit itself, not
// from a failure policy or a failover guard.
func limiterDenied(o decision.Outcome, by decision.By) bool {
	return o == decision.Denied && (by == decision.ByUnknown || by == decision.ByRedis || by == decision.ByLocal || by == decision.ByLease)
}

// Stamps are how the decision times a target reported fit rlctl's clock.
type Stamps struct {
	// Total counts the records with a decision time; Ignored those whose
	// time, moved onto rlctl's clock, lay outside the request's own send
	// and receive (beyond stampSlack), or came from an untrusted gateway:
	// the analysis used send and receive for them.
	Total, Ignored int64
	// Untrusted names the gateways whose sampled times disagreed with the
	// shift in more than untrustedShare of the records: all their times
	// were ignored.
	Untrusted []string
	// Shift is the largest shift a gateway's times were moved by (their
	// clock against rlctl's), 0 when they fit as they were.
	Shift time.Duration
}

// RaceConduct counts the race pattern's releases: one identity's request
// through every gateway at once, in one round.
type RaceConduct struct {
	// Releases counts them; Concurrent those in which two requests at
	// least were in flight at one instant (the second sent before the
	// first answer came): only then could two checks interleave.
	Releases, Concurrent int
}

// BoundaryShot is one boundary the boundary pattern fired at.
type BoundaryShot struct {
	At time.Duration
	// Aim is how the boundary was found (Meta.Aims), nil when the history
	// did not record it.
	Aim *history.Aim
	// Rolled says the answers show more than one window: for some
	// identity the shots admitted more than the published count, or a
	// request after the boundary was admitted after one before it was
	// denied.
	Rolled bool
	// Before counts the answered requests aimed before the boundary, and
	// Early those of them decided before it (by the target's own decision
	// time where it gave one, else by when the answer came): a shot whose
	// early half was decided after the edge fell in one window.
	// AdmittedBefore counts those of Before admitted: a half that met a
	// fresh window, as the pattern leaves it, is admitted.
	Before, Early, AdmittedBefore int64
}

// stampSlack is how far outside its request's send and receive a decision
// time may lie, once shifted, and still be used: a history keeps far
// times only to the microsecond, and a clock that moves in steps (the
// embedded Redis's TIME) is off by up to one.
const stampSlack = 2 * offsetSlack

// untrustedShare is the share of a gateway's sampled decision times that
// must disagree with its shift for none of them to be used: a clock that
// jitters disagrees now and then, a made-up one nearly always.
const untrustedShare = 0.25

// trustStamps marks the gateways whose sampled decision times disagree
// with the shift clockShifts chose, too often to be a clock.
func (a *analyzer) trustStamps(cb *clockBounds) {
	total := make([]int, len(a.gwNames))
	bad := make([]int, len(a.gwNames))
	for _, o := range cb.sample {
		g := a.denseGateway(o.gateway)
		total[g]++
		var v int64
		if a.shift != nil {
			v = a.shift[g]
		}
		if v < o.from-stampSlack || v > o.to+stampSlack {
			bad[g]++
		}
	}
	for g := range total {
		if total[g] > 0 && float64(bad[g]) > untrustedShare*float64(total[g]) {
			if a.untrusted == nil {
				a.untrusted = make([]bool, len(a.gwNames))
			}
			a.untrusted[g] = true
		}
	}
}

// stamp is record i's decision time on rlctl's clock, when the target gave
// one that can be used: from a trusted gateway, and within its request's
// send and receive once shifted (a request was decided while in flight).
func (a *analyzer) stamp(h *history.History, i int) (int64, bool) {
	d := h.Decided(i)
	if d == history.NoTime {
		return 0, false
	}
	g := a.gateway(h, i)
	if a.untrusted != nil && a.untrusted[g] {
		return 0, false
	}
	t := clampTime(int64(d))
	if a.shift != nil {
		t -= a.shift[g]
	}
	if s, r := h.Sent(i), h.Received(i); s != history.NoTime && r != history.NoTime && r >= s &&
		(t < int64(s)-stampSlack || t > int64(r)+stampSlack) {
		return 0, false
	}
	return t, true
}

// conductScan is the bookkeeping of Conduct over the records, one chunk at
// a time, beside scanIdentities.
type conductScan struct {
	stamps, ignored int64
	// releases maps (round, identity) to the two earliest sends and the
	// earliest answer of its released requests.
	releases map[uint64]*flight
	// shots maps (boundary, identity) to what its shots were answered.
	shots map[uint64]*shotTally
}

type flight struct {
	first, second, firstAnswer time.Duration // second: NoTime until two were sent
}

type shotTally struct {
	allowed int64
	// deniedBefore is the earliest denial before the boundary, or -1.
	deniedBefore time.Duration
	// reopened: admitted after the boundary, after a denial before it.
	reopened bool
	// before counts the answers to requests aimed before the boundary,
	// early those decided before it, admittedBefore those admitted.
	before, early, admittedBefore int64
}

// conduct takes record i of chunk c into the conduct's bookkeeping.
func (a *analyzer) conduct(c *history.History, i int, id uint32) {
	cs := &a.cs
	o := c.Outcome(i)
	decided, stamped := a.stamp(c, i)
	if c.Decided(i) != history.NoTime && o != decision.Dropped {
		cs.stamps++
		if !stamped {
			cs.ignored++
		}
	}
	sent, recv := c.Sent(i), c.Received(i)
	if sent != history.NoTime && recv != history.NoTime && o != decision.Dropped {
		a.idState[id].first.add(sent, recv, limiterDenied(o, c.By(i)))
	}
	if r := c.Round(i); r >= 0 && sent != history.NoTime && recv != history.NoTime && len(a.boundaries) == 0 {
		if cs.releases == nil {
			cs.releases = map[uint64]*flight{}
		}
		k := uint64(uint32(r))<<32 | uint64(id)
		f := cs.releases[k]
		if f == nil {
			cs.releases[k] = &flight{first: sent, second: history.NoTime, firstAnswer: recv}
		} else {
			switch {
			case sent < f.first:
				f.first, f.second = sent, f.first
			case f.second == history.NoTime || sent < f.second:
				f.second = sent
			}
			f.firstAnswer = min(f.firstAnswer, recv)
		}
	}
	if len(a.boundaries) == 0 || (o != decision.Allowed && o != decision.Denied) {
		return
	}
	at := int64(c.Intended(i))
	// The shot of boundary b: intended within [b-span, b+span].
	k := sort.Search(len(a.boundaries), func(j int) bool { return a.boundaries[j]+a.span >= at })
	if k == len(a.boundaries) || at < a.boundaries[k]-a.span {
		return
	}
	if cs.shots == nil {
		cs.shots = map[uint64]*shotTally{}
	}
	key := uint64(k)<<32 | uint64(id)
	st := cs.shots[key]
	if st == nil {
		st = &shotTally{deniedBefore: -1}
		cs.shots[key] = st
	}
	before := at < a.boundaries[k]
	if before && (stamped || recv != history.NoTime) {
		if !stamped {
			decided = int64(recv)
		}
		st.before++
		if decided < a.boundaries[k] {
			st.early++
		}
		if o == decision.Allowed {
			st.admittedBefore++
		}
	}
	switch {
	case o == decision.Allowed:
		st.allowed++
		if !before && st.deniedBefore >= 0 && sent > st.deniedBefore {
			st.reopened = true
		}
	case before:
		if st.deniedBefore < 0 || recv < st.deniedBefore {
			st.deniedBefore = recv
		}
	}
}

// conductResult is Conduct from the bookkeeping.
func (a *analyzer) conductResult() Conduct {
	var out Conduct
	for k := range a.idState {
		st := &a.idState[k]
		out.Unanswered += st.maybe
		if st.first.seen {
			out.Opened++
		}
		if st.first.deniedAlone() {
			out.DeniedFirst++
		}
	}
	out.Stamps = Stamps{Total: a.cs.stamps, Ignored: a.cs.ignored}
	out.FromSent = LatencyMetrics(a.fromSent)
	for g, u := range a.untrusted {
		if u {
			out.Stamps.Untrusted = append(out.Stamps.Untrusted, a.gwNames[g])
		}
	}
	for _, v := range a.shift {
		if abs(v) > abs(int64(out.Stamps.Shift)) {
			out.Stamps.Shift = time.Duration(v)
		}
	}
	for _, f := range a.cs.releases {
		out.Race.Releases++
		if f.second != history.NoTime && f.second < f.firstAnswer {
			out.Race.Concurrent++
		}
	}
	aims := a.h.Meta.Aims
	if len(aims) != len(a.h.Meta.Boundaries) {
		aims = nil
	}
	// a.boundaries is Meta.Boundaries sorted; aims follow Meta's order.
	order := make([]int, len(a.h.Meta.Boundaries))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(a.h.Meta.Boundaries[x], a.h.Meta.Boundaries[y]) })
	for k, b := range a.boundaries {
		shot := BoundaryShot{At: time.Duration(b)}
		if aims != nil {
			aim := aims[order[k]]
			shot.Aim = &aim
		}
		out.Boundaries = append(out.Boundaries, shot)
	}
	for key, st := range a.cs.shots {
		k := int(key >> 32)
		if st.reopened || (a.l > 0 && st.allowed > a.l) {
			out.Boundaries[k].Rolled = true
		}
		out.Boundaries[k].Before += st.before
		out.Boundaries[k].Early += st.early
		out.Boundaries[k].AdmittedBefore += st.admittedBefore
	}
	return out
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
