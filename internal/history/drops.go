package history

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Drops tallies the requests a run dropped (no worker was free at their
// scheduled time) without a Record each. Far above what a target serves,
// drops outnumber the requests sent a hundred to one, and all the analysis
// needs of them is how many, whose and when: so each identity, gateway and
// endpoint has a count, and time is kept as slices of the schedule.
//
// A history may also hold dropped requests as Records with Outcome
// decision.Dropped (files written before Drops, and histories built by
// hand); a dropped request is counted in one or the other, never both.
type Drops struct {
	// Identity, Gateway and Endpoint count the drops by index into
	// Meta.Identities, Meta.Gateways and Meta.Endpoints; each may be
	// shorter than its names (the rest are zero).
	Identity []int64
	Gateway  []int64
	Endpoint []int64
	// Slices place the drops in time, by intended offset, sorted by From
	// and disjoint. Every drop is in one slice and each counts the same
	// total as Identity.
	Slices []DropSlice
	// span is how wide a slice Add makes: dropSpan, doubled each time the
	// slices are coarsened to stay within maxDropSlices.
	span time.Duration
}

// DropSlice is a span of the schedule in which requests were dropped:
// From and To are the intended offsets of the first and last of them.
type DropSlice struct {
	From, To time.Duration
	Count    int64
}

const (
	// dropSpan is the width of a drop slice: fine beside the 100ms over
	// which analysis.ExplainDrops reads the offered rate.
	dropSpan = 10 * time.Millisecond
	// maxDropSlices bounds the slices (24 bytes each): past it adjacent
	// pairs join, so a run that drops for days keeps a few megabytes.
	maxDropSlices = 1 << 17
)

// Add counts one request dropped at intended offset at. Requests are
// usually added in intended order; one added out of order still counts,
// in a slice of its own when none is near.
func (d *Drops) Add(at time.Duration, identity uint32, gateway uint16, endpoint uint8) {
	d.Identity = bump(d.Identity, int(identity))
	d.Gateway = bump(d.Gateway, int(gateway))
	d.Endpoint = bump(d.Endpoint, int(endpoint))
	if n := len(d.Slices); n > 0 {
		s := &d.Slices[n-1]
		if at >= s.From && at-s.From < d.width() {
			s.To = max(s.To, at)
			s.Count++
			return
		}
		if at < s.From {
			d.insert(DropSlice{From: at, To: at, Count: 1})
			return
		}
	}
	d.Slices = append(d.Slices, DropSlice{From: at, To: at, Count: 1})
	if len(d.Slices) > maxDropSlices {
		d.coarsen()
	}
}

// Total is the number of requests dropped.
func (d *Drops) Total() int64 {
	var n int64
	for _, c := range d.Identity {
		n += c
	}
	return n
}

// Empty reports whether nothing was dropped.
func (d *Drops) Empty() bool { return len(d.Slices) == 0 }

func (d *Drops) width() time.Duration {
	if d.span == 0 {
		return dropSpan
	}
	return d.span
}

// insert adds a slice out of order, joining the slice that holds its time.
func (d *Drops) insert(s DropSlice) {
	k, found := slices.BinarySearchFunc(d.Slices, s.From, func(x DropSlice, at time.Duration) int { return cmp.Compare(x.From, at) })
	switch {
	case found:
		d.Slices[k].Count += s.Count
		return
	case k > 0 && s.From <= d.Slices[k-1].To:
		d.Slices[k-1].Count += s.Count
		return
	}
	d.Slices = slices.Insert(d.Slices, k, s)
	if len(d.Slices) > maxDropSlices {
		d.coarsen()
	}
}

// coarsen doubles the slice width and joins the slices each new one covers.
func (d *Drops) coarsen() {
	for len(d.Slices) > maxDropSlices/2 {
		d.span = 2 * d.width()
		d.Slices = joinSlices(d.Slices, func(last, s DropSlice) bool { return s.To-last.From < d.span })
	}
}

// joinSlices joins each of ss, sorted by From, into the one before it when
// join says so, in place.
func joinSlices(ss []DropSlice, join func(last, s DropSlice) bool) []DropSlice {
	out := ss[:0]
	for _, s := range ss {
		if n := len(out); n > 0 && join(out[n-1], s) {
			out[n-1].To = max(out[n-1].To, s.To)
			out[n-1].Count += s.Count
			continue
		}
		out = append(out, s)
	}
	return out
}

// addAll adds o's drops, with o's indices mapped by the given functions and
// its times moved by shift, keeping the slices sorted and disjoint.
func (d *Drops) addAll(o *Drops, shift time.Duration, identity func(int) int, gateway func(int) int, endpoint func(int) int) {
	add := func(to []int64, from []int64, index func(int) int) []int64 {
		for k, c := range from {
			if c != 0 {
				to = bumpBy(to, index(k), c)
			}
		}
		return to
	}
	d.Identity = add(d.Identity, o.Identity, identity)
	d.Gateway = add(d.Gateway, o.Gateway, gateway)
	d.Endpoint = add(d.Endpoint, o.Endpoint, endpoint)
	if len(o.Slices) == 0 {
		return
	}
	all := slices.Grow(d.Slices, len(o.Slices))
	for _, s := range o.Slices {
		all = append(all, DropSlice{From: s.From + shift, To: s.To + shift, Count: s.Count})
	}
	slices.SortStableFunc(all, func(a, b DropSlice) int { return cmp.Compare(a.From, b.From) })
	// Slices of different machines may overlap: join them, so the
	// slices stay disjoint.
	d.Slices = joinSlices(all, func(last, s DropSlice) bool { return s.From <= last.To })
	d.span = max(d.span, o.span)
	if len(d.Slices) > maxDropSlices {
		d.coarsen()
	}
}

func bump(s []int64, k int) []int64 { return bumpBy(s, k, 1) }

func bumpBy(s []int64, k int, by int64) []int64 {
	if k >= len(s) {
		s = append(s, make([]int64, k+1-len(s))...)
	}
	s[k] += by
	return s
}

// Check reports what makes d inconsistent with itself or with names of the
// given numbers: a negative count, a count for an index with no name, or
// slices unsorted, overlapping or counting another total.
func (d *Drops) Check(identities, gateways, endpoints int) error {
	totals := [3]int64{}
	for k, col := range [3]struct {
		c    []int64
		n    int
		what string
	}{{d.Identity, identities, "identity"}, {d.Gateway, gateways, "gateway"}, {d.Endpoint, endpoints, "endpoint"}} {
		for i, c := range col.c {
			if c < 0 {
				return fmt.Errorf("%s %d has %d drops", col.what, i, c)
			}
			if c > 0 && i >= col.n {
				return fmt.Errorf("drops counted for %s %d of %d", col.what, i, col.n)
			}
			totals[k] += c
		}
	}
	var sum int64
	for i, s := range d.Slices {
		if s.Count <= 0 || s.To < s.From || i > 0 && s.From <= d.Slices[i-1].To {
			return fmt.Errorf("slice %d [%d, %d] of %d drops is empty, reversed or out of order", i, s.From, s.To, s.Count)
		}
		sum += s.Count
	}
	if totals[0] != sum || totals[1] != sum || totals[2] != sum {
		return fmt.Errorf("%d drops by identity, %d by gateway, %d by endpoint, %d by time", totals[0], totals[1], totals[2], sum)
	}
	return nil
}

// Merge adds o's drops, whose indices name the same identities, gateways
// and endpoints as d's, on the same time line.
func (d *Drops) Merge(o *Drops) {
	same := func(k int) int { return k }
	d.addAll(o, 0, same, same, same)
}
