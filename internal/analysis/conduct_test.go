package analysis

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
)

// conductRecord is a record of identity id through gateway g, sent and answered
// at the given offsets.
func conductRecord(id uint32, g uint16, round int32, intended, sent, recv time.Duration, o decision.Outcome) history.Record {
	return history.Record{Intended: intended, Sent: sent, Received: recv, Decided: history.NoTime, RetryAfter: history.NoTime,
		Identity: id, Gateway: g, Round: round, Outcome: o, By: decision.ByRedis}
}

// A release counts as concurrent when two of its requests were in flight
// together, however the rest went: one whose every request was answered
// before the next left did not race.
func TestRaceReleasesConcurrent(t *testing.T) {
	t.Parallel()
	h := history.New(history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"a", "b"}, Gateways: []string{"g0", "g1", "g2"}, Rounds: 2}, 0)
	// Round 0, identity a: the second leaves before the first's answer.
	h.Append(conductRecord(0, 0, 0, 10*msec, 10*msec, 12*msec, decision.Allowed))
	h.Append(conductRecord(0, 1, 0, 10*msec, 11*msec, 13*msec, decision.Denied))
	h.Append(conductRecord(0, 2, 0, 10*msec, 20*msec, 21*msec, decision.Denied))
	// Round 0, identity b: one after the other, in any order recorded.
	h.Append(conductRecord(1, 2, 0, 10*msec, 16*msec, 17*msec, decision.Denied))
	h.Append(conductRecord(1, 0, 0, 10*msec, 10*msec, 11*msec, decision.Allowed))
	h.Append(conductRecord(1, 1, 0, 10*msec, 12*msec, 13*msec, decision.Denied))
	// Round 1, identity a: all three at once.
	for g := range uint16(3) {
		h.Append(conductRecord(0, g, 1, 50*msec, 50*msec+time.Duration(g)*100*time.Microsecond, 55*msec, decision.Denied))
	}
	// Not a release: a prefill request.
	h.Append(conductRecord(0, 0, history.NoRound, 40*msec, 40*msec, 41*msec, decision.Allowed))
	res := analyzed(t, h, Options{})
	if got := res.Conduct.Race; got.Releases != 3 || got.Concurrent != 2 {
		t.Errorf("race conduct %+v, want 3 releases, 2 concurrent", got)
	}
}

// A boundary shot rolled when its answers show a second window: more
// than the limit admitted, or an admission after the boundary following a
// denial before it.
func TestBoundaryShotsRolled(t *testing.T) {
	t.Parallel()
	span := 50 * msec
	meta := history.Meta{Limit: rate.Limit{Count: 3, Window: time.Second}, Identities: []string{"a", "b"}, Gateways: []string{"g"},
		Boundaries: []time.Duration{1000 * msec, 3000 * msec, 5000 * msec}, BoundarySpan: span,
		Aims: []history.Aim{{How: "epoch", Uncertainty: -1}, {How: "first-request", Uncertainty: 2 * msec}, {How: "headers", Uncertainty: time.Second}}}
	h := history.New(meta, 0)
	at := func(b time.Duration, k int) time.Duration { return b + time.Duration(k)*10*msec }
	// At 1s, identity a: 3 admitted before, 3 after: six in one span.
	for k := -3; k < 3; k++ {
		h.Append(conductRecord(0, 0, history.NoRound, at(1000*msec, k), at(1000*msec, k), at(1000*msec, k)+msec, decision.Allowed))
	}
	// At 3s, identity b: a denial before, then an admission after.
	h.Append(conductRecord(1, 0, history.NoRound, at(3000*msec, -2), at(3000*msec, -2), at(3000*msec, -2)+msec, decision.Denied))
	h.Append(conductRecord(1, 0, history.NoRound, at(3000*msec, 1), at(3000*msec, 1), at(3000*msec, 1)+msec, decision.Allowed))
	// At 5s: three admitted, all inside one window, nothing after.
	for k := -3; k < 3; k++ {
		o := decision.Allowed
		if k >= 0 {
			o = decision.Denied
		}
		h.Append(conductRecord(0, 0, history.NoRound, at(5000*msec, k), at(5000*msec, k), at(5000*msec, k)+msec, o))
	}
	res := analyzed(t, h, Options{})
	shots := res.Conduct.Boundaries
	if len(shots) != 3 {
		t.Fatalf("shots %+v", shots)
	}
	for k, want := range []bool{true, true, false} {
		if shots[k].Rolled != want {
			t.Errorf("shot at %v rolled %v, want %v", shots[k].At, shots[k].Rolled, want)
		}
		if shots[k].Aim == nil || *shots[k].Aim != meta.Aims[k] {
			t.Errorf("shot at %v aim %v, want %v", shots[k].At, shots[k].Aim, meta.Aims[k])
		}
	}
}

// Decision times that fit no request's send and receive are not used: a
// gateway whose times jump about is not trusted at all, and the bounds
// come from send and receive; one whose times fit keeps them.
func TestStampsThatDoNotFitAreIgnored(t *testing.T) {
	t.Parallel()
	h := history.New(history.Meta{Limit: rate.Limit{Count: 100, Window: time.Second}, Identities: []string{"u"}, Gateways: []string{"good", "bad"}}, 0)
	for i := range 200 {
		sent := time.Duration(i) * 5 * msec
		r := conductRecord(0, uint16(i%2), history.NoRound, sent, sent, sent+msec, decision.Allowed)
		if i%2 == 0 {
			r.Decided = sent + msec/2
		} else {
			r.Decided = sent + time.Duration((i*7919)%120-60)*time.Second // garbage
		}
		h.Append(r)
	}
	res := analyzed(t, h, Options{})
	s := res.Conduct.Stamps
	if s.Total != 200 || s.Ignored < 100 || len(s.Untrusted) != 1 || s.Untrusted[0] != "bad" {
		t.Errorf("stamps %+v, want 200 seen, the bad gateway's 100 ignored and it untrusted", s)
	}
}

// An identity denied its very first request while none other of its
// requests was in flight met a counter that was not fresh; one whose first
// denial overlapped its second request, whose first was refused by a
// failure policy, or whose first was admitted did not show that, in
// whatever order the records were kept.
func TestDeniedFirstRequest(t *testing.T) {
	t.Parallel()
	h := history.New(history.Meta{Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"stale", "burst", "policy", "fresh", "late"}, Gateways: []string{"g"}}, 0)
	n := history.NoRound
	// stale: denied at 10ms, answered at 11ms; the next leaves at 20ms.
	h.Append(conductRecord(0, 0, n, 20*msec, 20*msec, 21*msec, decision.Denied))
	h.Append(conductRecord(0, 0, n, 10*msec, 10*msec, 11*msec, decision.Denied))
	// burst: its first is denied, but the second left before that answer.
	h.Append(conductRecord(1, 0, n, 10*msec, 10*msec, 15*msec, decision.Denied))
	h.Append(conductRecord(1, 0, n, 10*msec, 11*msec, 12*msec, decision.Allowed))
	// policy: refused by fail-closed, not by the limit.
	closed := conductRecord(2, 0, n, 10*msec, 10*msec, 11*msec, decision.Denied)
	closed.By = decision.ByFailClosed
	h.Append(closed)
	// fresh: admitted first, denied later.
	h.Append(conductRecord(3, 0, n, 10*msec, 10*msec, 11*msec, decision.Allowed))
	h.Append(conductRecord(3, 0, n, 30*msec, 30*msec, 31*msec, decision.Denied))
	// late: a dropped request (never sent) before its first, which is admitted.
	h.Append(history.Record{Intended: 5 * msec, Sent: history.NoTime, Received: history.NoTime, Decided: history.NoTime, RetryAfter: history.NoTime, Identity: 4, Round: n, Outcome: decision.Dropped})
	h.Append(conductRecord(4, 0, n, 40*msec, 40*msec, 41*msec, decision.Allowed))
	res := analyzed(t, h, Options{})
	if got := res.Conduct; got.DeniedFirst != 1 || got.Opened != 5 {
		t.Errorf("denied first %d of %d opened, want 1 of 5", got.DeniedFirst, got.Opened)
	}
}

// A boundary shot counts the answered requests it aimed before the
// boundary, and those of them decided before it: by the answer's arrival
// when the target stamps no decision time, so a late answer counts as
// decided late.
func TestBoundaryShotsEarlyHalf(t *testing.T) {
	t.Parallel()
	meta := history.Meta{Limit: rate.Limit{Count: 3, Window: time.Second}, Identities: []string{"a"}, Gateways: []string{"g"},
		Boundaries: []time.Duration{1000 * msec, 3000 * msec}, BoundarySpan: 50 * msec,
		Aims: []history.Aim{{How: "epoch"}, {How: "epoch"}}}
	h := history.New(meta, 0)
	// At 1s: of three aimed before, two answered before the edge and one
	// 30ms after it; the three aimed after do not count.
	for k, answer := range []time.Duration{5 * msec, 5 * msec, 60 * msec, msec, msec, msec} {
		at := 970*msec + time.Duration(k)*10*msec
		h.Append(conductRecord(0, 0, history.NoRound, at, at, at+answer, decision.Allowed))
	}
	// At 3s: all three aimed before answered after the edge; one
	// dropped request counts for nothing.
	for k := range 3 {
		at := 2970*msec + time.Duration(k)*10*msec
		h.Append(conductRecord(0, 0, history.NoRound, at, at, at+80*msec, decision.Allowed))
	}
	h.Append(history.Record{Intended: 2960 * msec, Sent: history.NoTime, Received: history.NoTime, Decided: history.NoTime,
		RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Dropped})
	shots := analyzed(t, h, Options{}).Conduct.Boundaries
	if len(shots) != 2 || shots[0].Before != 3 || shots[0].Early != 2 || shots[1].Before != 3 || shots[1].Early != 0 {
		t.Errorf("shots %+v; want 3 aimed before each edge, 2 and 0 of them decided before it", shots)
	}
}
