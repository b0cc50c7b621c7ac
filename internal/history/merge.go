package history

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Merge combines histories of one scenario run on several machines into one
// history, as if a single machine had recorded everything:
//
//   - the scenario name and published limit must agree, else an error;
//   - identities, gateways and endpoints are matched by name (the union, in
//     order of first appearance), so "user-1" on two machines is one
//     identity with one limit; an identity's shard (Meta.Shards) is the
//     first one a history names for it;
//   - offsets are re-based on the earliest Meta.Start, so a record keeps its
//     wall-clock instant exactly (to the nanosecond);
//   - a history whose Meta.Clock was measured is first moved onto the
//     reference's time line (its Start less its clock's Offset), and each of
//     its [Sent, Received] intervals is widened by the Offset's Uncertainty
//     on both sides, so a decision surely inside it stays inside it
//     wherever the true offset lay: ceiling and ceiling_upper of the merge
//     remain bounds. Decided times came from the reference's clock (the
//     target's), so they keep their instant on it. Intended is moved, not
//     widened, so latency grows by at most the Uncertainty;
//   - boundaries and faults are re-based too and de-duplicated; Rounds is the
//     largest, since round k on every machine is the same scheduled instant
//     (the sum when the histories are segments of one plan, which split
//     the rounds between them); the header forms seen are the union, Late
//     the largest;
//   - the dropped requests tallied (Meta.Drops) add up, by name, their
//     slices re-based like Intended;
//   - records are sorted by Intended (stable, so ties keep input order).
//
// The inputs are not modified.
func Merge(hs ...*History) (*History, error) {
	for i, h := range hs {
		if h != nil && h.Spilled() {
			return nil, fmt.Errorf("merge histories: history %d spilled to disk; MergeSpilled merges those", i)
		}
	}
	out, srcs, err := mergeMeta(hs, -1)
	if err != nil {
		return nil, err
	}
	// Order (source, index) pairs by re-based Intended.
	type ref struct {
		at  time.Duration
		src int32
		i   int32
	}
	total := 0
	for _, s := range srcs {
		total += s.h.Len()
	}
	order := make([]ref, 0, total)
	for si, s := range srcs {
		for i := 0; i < s.h.Len(); i++ {
			order = append(order, ref{s.h.t[i].intended + s.shift, int32(si), int32(i)})
		}
	}
	slices.SortStableFunc(order, func(a, b ref) int { return cmp.Compare(a.at, b.at) })
	for _, o := range order {
		s := &srcs[o.src]
		out.Append(s.rebase(s.h.At(int(o.i))))
	}
	return out, nil
}

// MergeSpilled is Merge for histories too long to hold in memory (read in
// place, or spilled): each input is read a chunk at a time and the merge
// spills as o says, so memory stays bounded whatever the length. The
// records come out in input order (each history's own order, one history
// after another), not sorted by Intended: nothing the analysis measures
// depends on record order, as a live run records in completion order. The
// merge must be closed (it may hold a spill file).
func MergeSpilled(o SpillOptions, hs ...*History) (*History, error) {
	out, srcs, err := mergeMeta(hs, 0)
	if err != nil {
		return nil, err
	}
	if err := out.Spill(o); err != nil {
		return nil, err
	}
	for i := range srcs {
		s := &srcs[i]
		err := s.h.Chunks(func(c *History) error {
			for j := 0; j < c.Len(); j++ {
				out.Append(s.rebase(c.At(j)))
			}
			return nil
		})
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("merge histories: history %d: %w", i, err)
		}
	}
	return out, nil
}

// mergeSource is one input of a merge and how its records move onto the
// merge's time line and names.
type mergeSource struct {
	h     *History
	shift time.Duration
	// decided is the shift of Decided (the reference's own clock), and
	// widen the clock's uncertainty.
	decided, widen time.Duration
	identity       []uint32
	gateway        []uint16
	endpoint       []uint8
}

// rebase is r of s on the merge's time line, with the merge's indices.
func (s *mergeSource) rebase(r Record) Record {
	r.Intended += s.shift
	if r.Sent != NoTime {
		r.Sent += s.shift - s.widen
	}
	if r.Received != NoTime {
		r.Received += s.shift + s.widen
	}
	if r.Decided != NoTime {
		r.Decided += s.decided
	}
	r.Identity = remap(s.identity, r.Identity)
	r.Gateway = remap(s.gateway, r.Gateway)
	r.Endpoint = remap(s.endpoint, r.Endpoint)
	return r
}

// mergeMeta checks hs can be merged and returns the merge's empty history
// (with room for every record when capacity is negative, else for
// capacity) carrying the merged Meta, and each input's rebasing.
func mergeMeta(hs []*History, capacity int) (*History, []mergeSource, error) {
	if len(hs) == 0 {
		return nil, nil, errors.New("merge histories: nothing to merge")
	}
	for i, h := range hs {
		if h == nil {
			return nil, nil, fmt.Errorf("merge histories: history %d is nil", i)
		}
	}
	first := hs[0].Meta
	start := refStart(first)
	total := 0
	for i, h := range hs {
		if h.Meta.Scenario != first.Scenario {
			return nil, nil, fmt.Errorf("merge histories: history %d is scenario %q, history 0 is %q", i, h.Meta.Scenario, first.Scenario)
		}
		if h.Meta.Limit != first.Limit {
			return nil, nil, fmt.Errorf("merge histories: history %d has limit %v, history 0 has %v", i, h.Meta.Limit, first.Limit)
		}
		if rs := refStart(h.Meta); rs.Before(start) {
			start = rs
		}
		total += h.Len()
	}

	if capacity < 0 {
		capacity = total
	}
	out := New(Meta{Scenario: first.Scenario, Start: start, Limit: first.Limit}, capacity)
	var ids, gws, eps names
	var shots []shot
	// shards holds each merged identity's shard, by its index in ids.
	var shards []string
	srcs := make([]mergeSource, len(hs))
	segments := slices.ContainsFunc(hs, func(h *History) bool { return h.Meta.Segment != "" })
	for i, h := range hs {
		s := mergeSource{h: h, shift: refStart(h.Meta).Sub(start), widen: max(h.Meta.Clock.Uncertainty, 0)}
		s.decided = s.shift + h.Meta.Clock.Offset
		var err error
		if s.identity, err = mapNames[uint32](&ids, h.Meta.Identities, "identities"); err != nil {
			return nil, nil, err
		}
		for k, sh := range h.Meta.Shards {
			if k >= len(s.identity) || sh == "" {
				continue
			}
			j := int(s.identity[k])
			if j >= len(shards) {
				shards = append(shards, make([]string, j+1-len(shards))...)
			}
			if shards[j] == "" {
				shards[j] = sh
			}
		}
		if s.gateway, err = mapNames[uint16](&gws, h.Meta.Gateways, "gateways"); err != nil {
			return nil, nil, err
		}
		if s.endpoint, err = mapNames[uint8](&eps, h.Meta.Endpoints, "endpoints"); err != nil {
			return nil, nil, err
		}
		for k, b := range h.Meta.Boundaries {
			aim := Aim{Uncertainty: -1}
			if len(h.Meta.Aims) == len(h.Meta.Boundaries) {
				aim = h.Meta.Aims[k]
			}
			shots = append(shots, shot{b + s.shift, aim})
		}
		for code, n := range h.Meta.Statuses {
			if out.Meta.Statuses == nil {
				out.Meta.Statuses = map[int]int64{}
			}
			out.Meta.Statuses[code] += n
		}
		for _, f := range h.Meta.Faults {
			f.At += s.shift
			// An election's ends, the lag's start and the counters'
			// reading are offsets too; zero means not seen.
			for _, t := range []*time.Duration{&f.Stopped, &f.Answered, &f.Demoted, &f.Held, &f.Read} {
				if *t != 0 {
					*t += s.shift
				}
			}
			out.Meta.Faults = append(out.Meta.Faults, f)
		}
		out.Meta.Drops.addAll(&h.Meta.Drops, s.shift,
			func(k int) int { return int(remap(s.identity, uint32(k))) },
			func(k int) int { return int(remap(s.gateway, uint16(k))) },
			func(k int) int { return int(remap(s.endpoint, uint8(k))) })
		out.Meta.BoundarySpan = max(out.Meta.BoundarySpan, h.Meta.BoundarySpan)
		if segments {
			out.Meta.Rounds += h.Meta.Rounds
		} else {
			out.Meta.Rounds = max(out.Meta.Rounds, h.Meta.Rounds)
		}
		out.Meta.Late = max(out.Meta.Late, h.Meta.Late)
		if h.Meta.WallMoved.Abs() > out.Meta.WallMoved.Abs() {
			out.Meta.WallMoved = h.Meta.WallMoved
		}
		if h.Meta.RedisMoved.Abs() > out.Meta.RedisMoved.Abs() {
			out.Meta.RedisMoved = h.Meta.RedisMoved
		}
		if out.Meta.Clock.Reference == "" {
			// The merge is on the reference's time line now, with the
			// uncertainty spent on its records.
			out.Meta.Clock.Reference = h.Meta.Clock.Reference
		}
		out.Meta.Workers += h.Meta.Workers // each machine had its own pool
		for _, f := range h.Meta.HeaderForms {
			if !slices.Contains(out.Meta.HeaderForms, f) {
				out.Meta.HeaderForms = append(out.Meta.HeaderForms, f)
			}
		}
		if out.Meta.Retry == "" {
			out.Meta.Retry = h.Meta.Retry // every machine ran the same scenario
		}
		srcs[i] = s
	}
	out.Meta.Identities, out.Meta.Gateways, out.Meta.Endpoints = ids.list, gws.list, eps.list
	if shards != nil {
		out.Meta.Shards = append(shards, make([]string, len(ids.list)-len(shards))...)
	}
	out.Meta.Boundaries, out.Meta.Aims = joinShots(shots)
	out.Meta.Faults = joinFaults(out.Meta.Faults)

	return out, srcs, nil
}

// shot is a boundary a history aimed at, and how it was found.
type shot struct {
	at  time.Duration
	aim Aim
}

// joinShots sorts the boundaries of the merged histories and keeps one of
// each instant (the machines of a shared run aim at the same epoch-aligned
// boundaries), with the best-known aim any of them had. Aims are left out
// when no history recorded them.
func joinShots(shots []shot) ([]time.Duration, []Aim) {
	slices.SortStableFunc(shots, func(a, b shot) int { return cmp.Compare(a.at, b.at) })
	var at []time.Duration
	var aims []Aim
	recorded := false
	for _, s := range shots {
		recorded = recorded || s.aim.How != ""
		if n := len(at); n > 0 && at[n-1] == s.at {
			if p := &aims[n-1]; p.Uncertainty < 0 || (s.aim.Uncertainty >= 0 && s.aim.Uncertainty < p.Uncertainty) {
				*p = s.aim
			}
			continue
		}
		at, aims = append(at, s.at), append(aims, s.aim)
	}
	if !recorded {
		aims = nil
	}
	return at, aims
}

// joinFaults sorts faults by At and joins those that are one fault of the
// scenario (same action, shard and planned offset) applied by each machine
// itself, at its own instant (see traffic.Hook): their spans overlap, or
// they lie within joinSlack of each other. The join spans them all; its
// election runs from the earliest stop seen to the latest answer.
func joinFaults(fs []Fault) []Fault {
	slices.SortStableFunc(fs, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
	var out []Fault
	for _, f := range fs {
		if n := len(out); n > 0 {
			p := &out[n-1]
			same := p.Action == f.Action && p.Shard == f.Shard && p.Planned == f.Planned
			if same && (f.At <= p.At+p.For || f.At-p.At <= joinSlack) {
				if p.For > 0 || f.For > 0 {
					p.For = max(p.At+p.For, f.At+f.For) - p.At
				} // an instant (a failover) stays one, at the earliest
				if f.Stopped != 0 && (p.Stopped == 0 || f.Stopped < p.Stopped) {
					p.Stopped = f.Stopped
				}
				if f.Held != 0 && (p.Held == 0 || f.Held < p.Held) {
					p.Held = f.Held
				}
				p.Answered, p.Demoted, p.Read = max(p.Answered, f.Answered), max(p.Demoted, f.Demoted), max(p.Read, f.Read)
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// joinSlack is how far apart machines that share a start (verify
// --start-at) may apply one planned fault: a hook starts late by what the
// machine's load delays it, seen up to a quarter of a second.
const joinSlack = time.Second

// names is an ordered set of names.
type names struct {
	list  []string
	index map[string]int
}

func mapNames[T uint32 | uint16 | uint8](n *names, in []string, what string) ([]T, error) {
	if n.index == nil {
		n.index = map[string]int{}
	}
	out := make([]T, len(in))
	for i, name := range in {
		k, ok := n.index[name]
		if !ok {
			k = len(n.list)
			if uint64(k) > uint64(^T(0)) {
				return nil, fmt.Errorf("merge histories: more %s than fit in a record", what)
			}
			n.index[name] = k
			n.list = append(n.list, name)
		}
		out[i] = T(k)
	}
	return out, nil
}

// remap translates a per-source index; an index the source's Meta does not
// name is kept as is (it was already unnamed there).
func remap[T uint32 | uint16 | uint8](m []T, v T) T {
	if int(v) < len(m) {
		return m[v]
	}
	return v
}

// refStart is when m's run started on the reference clock: its own Start
// less its clock's offset (the same when the offset was not measured).
func refStart(m Meta) time.Time { return m.Start.Add(-m.Clock.Offset) }
