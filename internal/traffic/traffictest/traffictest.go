package traffictest

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// Counts tallies a history's outcomes, the dropped requests it tallies
// without a record (Meta.Drops) included.
func Counts(h *history.History) map[decision.Outcome]int {
	c := map[decision.Outcome]int{}
	if n := h.Meta.Drops.Total(); n > 0 {
		c[decision.Dropped] += int(n)
	}
	// A long benchmark run spills: read it a chunk at a time.
	_ = h.Chunks(func(ch *history.History) error {
		for i := range ch.Len() {
			c[ch.Outcome(i)]++
		}
		return nil
	})
	return c
}

// Requests is the number of requests a history's run scheduled: its
// records and the dropped requests it tallies without one.
func Requests(h *history.History) int { return h.Len() + int(h.Meta.Drops.Total()) }

// RaceShape checks the records of a race run: per round, N·(L−1) prefill
// records (NoRound) and N·G released records marked with the round, each
// gateway once per identity. A void round (one that straddled an epoch
// boundary) has its released records unmarked and does not count in
// Meta.Rounds; so has the last round begun when the run's duration ended
// it, with fewer records where it ended before its release. It returns
// the allowed released requests per valid round and identity.
func RaceShape(t *testing.T, h *history.History, n, gws int, l int64) map[[2]int]int {
	t.Helper()
	released := map[[2]int]map[uint16]bool{}
	allowed := map[[2]int]int{}
	unmarked := map[[2]int]int{}
	last := -1 // the last round begun
	for i := range h.Len() {
		r := h.At(i)
		name := h.Meta.Identities[r.Identity]
		var round, idx int
		if _, err := fmt.Sscanf(name, "race-%d-%d", &round, &idx); err != nil {
			t.Fatalf("record %d: identity %q is not a race identity", i, name)
		}
		k := [2]int{round, idx}
		last = max(last, round)
		if r.Round == history.NoRound {
			unmarked[k]++
			continue
		}
		if int(r.Round) != round {
			t.Fatalf("record %d: identity %q released in round %d", i, name, r.Round)
		}
		if released[k] == nil {
			released[k] = map[uint16]bool{}
		}
		if released[k][r.Gateway] {
			t.Fatalf("round %d identity %d: gateway %d released twice", round, idx, r.Gateway)
		}
		released[k][r.Gateway] = true
		if r.Outcome == decision.Allowed {
			allowed[k]++
		}
	}
	if len(released) != h.Meta.Rounds*n {
		t.Fatalf("%d released (round, identity) pairs; want %d (Meta.Rounds %d × %d identities)", len(released), h.Meta.Rounds*n, h.Meta.Rounds, n)
	}
	for k, g := range released {
		if len(g) != gws {
			t.Fatalf("round %v released through %d gateways; want %d", k, len(g), gws)
		}
		if int64(unmarked[k]) != l-1 {
			t.Fatalf("round %v prefilled %d; want %d", k, unmarked[k], l-1)
		}
	}
	for k, c := range unmarked {
		cut := k[0] == last && int64(c) < l-1+int64(gws)
		if released[k] == nil && int64(c) != l-1+int64(gws) && !cut {
			t.Fatalf("void round %v has %d records; want %d", k, c, l-1+int64(gws))
		}
	}
	return allowed
}

// BoundaryShape checks the boundary records: per aimed boundary, L per
// identity intended in [B−span, B) and L in [B, B+span), marked with the
// boundary's index. It returns how many were allowed around the boundaries
// whose batches went out on time (every "before" request answered before B,
// every "after" one sent at or after it), and how many such boundaries
// there were: on a machine stalled for longer than the span, a batch can
// slip past its boundary, and then it measures nothing. least is the
// fewest any identity had allowed around one of those boundaries (-1
// when none went out on time).
func BoundaryShape(t *testing.T, h *history.History, n int, l int64) (allowed, onTime, least int) {
	t.Helper()
	m := h.Meta
	if len(m.Boundaries) == 0 || m.BoundarySpan <= 0 {
		t.Fatalf("no boundaries recorded: %v span %v", m.Boundaries, m.BoundarySpan)
	}
	for k := 1; k < len(m.Boundaries); k++ {
		if m.Boundaries[k] <= m.Boundaries[k-1] {
			t.Fatalf("boundaries not increasing: %v", m.Boundaries)
		}
	}
	nb := len(m.Boundaries)
	least = -1
	before, after := make([]int, nb), make([]int, nb)
	late := make([]bool, nb)
	allowedAt := make([]int, nb)
	byIdentity := make([]map[uint32]int, nb)
	for k := range byIdentity {
		byIdentity[k] = map[uint32]int{}
	}
	for i := range h.Len() {
		r := h.At(i)
		if r.Round != history.NoRound {
			t.Fatalf("record %d marked round %d; boundary runs have no race rounds", i, r.Round)
		}
		k := -1
		for j, b := range m.Boundaries {
			if r.Intended >= b-m.BoundarySpan && r.Intended < b+m.BoundarySpan {
				k = j
			}
		}
		if k < 0 {
			continue // a probe, learning where windows roll
		}
		b := m.Boundaries[k]
		if r.Intended < b {
			before[k]++
			late[k] = late[k] || r.Received >= b || r.Outcome == decision.Dropped
		} else {
			after[k]++
			late[k] = late[k] || r.Sent < b || r.Outcome == decision.Dropped
		}
		if _, ok := byIdentity[k][r.Identity]; !ok {
			byIdentity[k][r.Identity] = 0
		}
		if r.Outcome == decision.Allowed {
			allowedAt[k]++
			byIdentity[k][r.Identity]++
		}
	}
	// A dropped request has no record, only a slice of the schedule: a
	// boundary with drops counts them all, not which side they were on.
	dropped := make([]int, nb)
	for _, s := range m.Drops.Slices {
		for j, b := range m.Boundaries {
			if s.From >= b-m.BoundarySpan && s.From < b+m.BoundarySpan {
				if s.To >= b+m.BoundarySpan {
					t.Fatalf("drops intended from %v to %v, past boundary %d's span", s.From, s.To, j)
				}
				dropped[j] += int(s.Count)
				late[j] = true
			}
		}
	}
	for k := range nb {
		if before[k] > n*int(l) || after[k] > n*int(l) || before[k]+after[k]+dropped[k] != 2*n*int(l) {
			t.Fatalf("boundary %d: %d before, %d after, %d dropped; want %d each side", k, before[k], after[k], dropped[k], n*int(l))
		}
		if !late[k] {
			allowed += allowedAt[k]
			onTime++
			for _, a := range byIdentity[k] {
				if least < 0 || a < least {
					least = a
				}
			}
		}
	}
	return allowed, onTime, least
}

// AimedWithinSpan reports whether every boundary of a run was aimed at
// an edge known to within the shots' span. Under load the answers that
// teach an edge come late, and shots aimed less precisely than their
// span may miss it: such a run measures no burst either way.
func AimedWithinSpan(h *history.History) bool {
	for _, a := range h.Meta.Aims {
		if a.Uncertainty < 0 || a.Uncertainty > h.Meta.BoundarySpan {
			return false
		}
	}
	return true
}

// WorstSendLag is the most any request of h left after its intended time:
// how far the run's own machine fell behind its schedule.
func WorstSendLag(h *history.History) time.Duration {
	var worst time.Duration
	for i := range h.Len() {
		if s := h.Sent(i); s != history.NoTime {
			worst = max(worst, s-h.Intended(i))
		}
	}
	return worst
}
