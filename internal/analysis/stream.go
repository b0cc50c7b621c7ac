package analysis

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// A spilled history (history.History.Spill) is analysed in passes over its
// chunks, never held whole. The per-identity work needs an identity's
// records together, so one pass writes them, by groups of identities, to a
// scratch file: each group (a run of consecutive identities holding at
// most budget.group records, or one identity alone) is then read back and
// analysed in memory, except an identity alone over the budget, whose
// records are streamed through sorters that keep budget.run values in
// memory and merge sorted runs from disk. Memory is thus a few budgets,
// whatever the history's length.

// budget bounds a spilled history's analysis memory.
type budget struct {
	group int // records of a group of identities read into memory at once
	run   int // values a sorter holds before it writes a sorted run
	block int // bytes a group collects before writing them
}

// spillBudget is the budget Analyze uses: about 12 MB per group, 4 MB
// per sorter run (seven per worker), 64 KB buffered per group.
var spillBudget = budget{group: 1 << 19, run: 1 << 19, block: 1 << 16}

// groups are a spilled history's records grouped by identity on disk: the
// allowed (and possibly admitted) ones for the window figures, and, for a
// history with retries, every request that ran for the retry figures.
type groups struct {
	allowed *groupFile[allowedRec]
	retries *groupFile[retryRec]
}

// allowedRec is one allowed record, or with round maybeRound an error that
// may have been admitted.
type allowedRec struct {
	s, r  int64
	id    uint32
	round int32
}

const maybeRound = math.MinInt32

// idRange is the identities [lo, hi).
type idRange struct{ lo, hi int }

// groupFile collects fixed-size records by group into one scratch file,
// in blocks, and reads a group's back in the order they came.
type groupFile[T any] struct {
	size   int
	put    func([]byte, *T)
	get    func([]byte) T
	ranges []idRange
	of     []uint32 // identity -> group
	counts []int64  // records per group
	bufs   [][]T
	blocks [][]run
	perBuf int
	f      *os.File
	name   string
	end    int64
	enc    []byte
	err    error
}

// newGroupFile groups n identities, weighing weight(k) records each, into
// runs of at most b.group records (an identity heavier than that alone).
func newGroupFile[T any](n int, weight func(k int) int64, b budget, dir string, size int, put func([]byte, *T), get func([]byte) T) (*groupFile[T], error) {
	g := &groupFile[T]{size: size, put: put, get: get, of: make([]uint32, n), perBuf: max(1, b.block/size)}
	lo, sum := 0, int64(0)
	for k := range n {
		wk := weight(k)
		if k > lo && sum+wk > int64(b.group) {
			g.ranges = append(g.ranges, idRange{lo, k})
			g.counts = append(g.counts, sum)
			lo, sum = k, 0
		}
		sum += wk
		g.of[k] = uint32(len(g.ranges))
	}
	if n > 0 {
		g.ranges = append(g.ranges, idRange{lo, n})
		g.counts = append(g.counts, sum)
	}
	g.bufs = make([][]T, len(g.ranges))
	g.blocks = make([][]run, len(g.ranges))
	f, err := os.CreateTemp(dir, "rlctl-analysis-*.group")
	if err != nil {
		return nil, fmt.Errorf("analysis scratch: %w", err)
	}
	g.f, g.name = f, f.Name()
	if os.Remove(g.name) == nil {
		g.name = "" // gone with the process where the system allows
	}
	return g, nil
}

func (g *groupFile[T]) add(id uint32, r T) {
	k := g.of[id]
	if g.bufs[k] == nil {
		g.bufs[k] = make([]T, 0, g.perBuf)
	}
	g.bufs[k] = append(g.bufs[k], r)
	if len(g.bufs[k]) == g.perBuf {
		g.flush(int(k))
	}
}

func (g *groupFile[T]) flush(k int) {
	buf := g.bufs[k]
	if len(buf) == 0 || g.err != nil {
		return
	}
	g.enc = g.enc[:0]
	for j := range buf {
		g.enc = append(g.enc, make([]byte, g.size)...)
		g.put(g.enc[j*g.size:], &buf[j])
	}
	if _, err := g.f.WriteAt(g.enc, g.end); err != nil {
		g.err = fmt.Errorf("analysis scratch: %w", err)
		return
	}
	g.blocks[k] = append(g.blocks[k], run{off: g.end, n: len(buf)})
	g.end += int64(len(g.enc))
	g.bufs[k] = buf[:0]
}

// finish writes what the groups still buffer, and frees the buffers.
func (g *groupFile[T]) finish() error {
	for k := range g.bufs {
		g.flush(k)
		g.bufs[k] = nil
	}
	return g.err
}

// each calls fn with group k's records, a block at a time; raw and recs
// are the caller's scratch.
func (g *groupFile[T]) each(k int, raw *[]byte, recs *[]T, fn func([]T)) error {
	for _, b := range g.blocks[k] {
		need := b.n * g.size
		if cap(*raw) < need {
			*raw = make([]byte, need)
		}
		buf := (*raw)[:need]
		if _, err := g.f.ReadAt(buf, b.off); err != nil {
			return fmt.Errorf("analysis scratch: %w", err)
		}
		rs := (*recs)[:0]
		for j := range b.n {
			rs = append(rs, g.get(buf[j*g.size:]))
		}
		*recs = rs
		fn(rs)
	}
	return nil
}

// load returns group k's records grouped by identity (in their order
// within each) in byID, with off[k-lo] where identity k's start.
func (g *groupFile[T]) load(k int, raw *[]byte, recs, byID *[]T, idOf func(*T) uint32) ([]int, error) {
	rg := g.ranges[k]
	off := make([]int, rg.hi-rg.lo+1)
	// The blocks decode straight into all, sized for the group at once: no
	// scratch copy of each block, no regrowing.
	all := (*byID)[:0]
	if cap(all) < int(g.counts[k]) {
		all = make([]T, 0, g.counts[k])
	}
	for _, b := range g.blocks[k] {
		need := b.n * g.size
		if cap(*raw) < need {
			*raw = make([]byte, need)
		}
		buf := (*raw)[:need]
		if _, err := g.f.ReadAt(buf, b.off); err != nil {
			return nil, fmt.Errorf("analysis scratch: %w", err)
		}
		for j := range b.n {
			all = append(all, g.get(buf[j*g.size:]))
		}
	}
	for j := range all {
		off[int(idOf(&all[j]))-rg.lo+1]++
	}
	for j := 1; j < len(off); j++ {
		off[j] += off[j-1]
	}
	out := slicesGrow(*recs, len(all))
	fill := append([]int(nil), off[:len(off)-1]...)
	for j := range all {
		p := int(idOf(&all[j])) - rg.lo
		out[fill[p]] = all[j]
		fill[p]++
	}
	*recs, *byID = all, out
	return off, nil
}

func slicesGrow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (g *groupFile[T]) close() {
	if g == nil || g.f == nil {
		return
	}
	g.f.Close()
	if g.name != "" {
		os.Remove(g.name)
	}
	g.f = nil
}

func putAllowed(b []byte, r *allowedRec) {
	binary.LittleEndian.PutUint64(b, uint64(r.s))
	binary.LittleEndian.PutUint64(b[8:], uint64(r.r))
	binary.LittleEndian.PutUint32(b[16:], r.id)
	binary.LittleEndian.PutUint32(b[20:], uint32(r.round))
}

func getAllowed(b []byte) allowedRec {
	return allowedRec{
		s: int64(binary.LittleEndian.Uint64(b)), r: int64(binary.LittleEndian.Uint64(b[8:])),
		id: binary.LittleEndian.Uint32(b[16:]), round: int32(binary.LittleEndian.Uint32(b[20:])),
	}
}

const retryRecSize = 8*8 + 4 + 1 + 1

func putRetry(b []byte, r *retryRec) {
	for j, v := range [...]int64{r.sent, r.rawSent, r.recv, r.s, r.e, r.retryAfter, r.told, r.waited} {
		binary.LittleEndian.PutUint64(b[8*j:], uint64(v))
	}
	binary.LittleEndian.PutUint32(b[64:], r.id)
	b[68], b[69] = r.attempt, byte(r.outcome)
}

func getRetry(b []byte) retryRec {
	v := func(j int) int64 { return int64(binary.LittleEndian.Uint64(b[8*j:])) }
	return retryRec{
		sent: v(0), rawSent: v(1), recv: v(2), s: v(3), e: v(4), retryAfter: v(5), told: v(6), waited: v(7),
		id: binary.LittleEndian.Uint32(b[64:]), attempt: b[68], outcome: decision.Outcome(b[69]),
	}
}

// weights counts, per identity, the records a spilled analysis groups:
// the allowed (and possibly admitted) ones, and every one that ran (for the
// retry figures).
type weights struct{ allowed, ran []int64 }

// add counts record i of chunk c, of identity id.
func (wt *weights) add(c *history.History, i, id int) {
	if id >= len(wt.allowed) {
		wt.allowed = append(wt.allowed, make([]int64, id+1-len(wt.allowed))...)
		wt.ran = append(wt.ran, make([]int64, id+1-len(wt.ran))...)
	}
	o := c.Outcome(i)
	if o == decision.Allowed || o == decision.Error && c.By(i) == decision.ByUnanswered {
		wt.allowed[id]++
	}
	if o != decision.Dropped {
		wt.ran[id]++
	}
}

// newGroups makes the scratch files the groups go to.
func (a *analyzer) newGroups(wt *weights) error {
	dir := a.h.SpillDir()
	of := func(w []int64) func(k int) int64 {
		return func(k int) int64 {
			if k < len(w) {
				return w[k]
			}
			return 0
		}
	}
	al, err := newGroupFile(len(a.idState), of(wt.allowed), a.budget, dir, 24, putAllowed, getAllowed)
	if err != nil {
		return err
	}
	a.groups = &groups{allowed: al}
	if a.h.HasRetries() {
		a.groups.retries, err = newGroupFile(len(a.idState), of(wt.ran), a.budget, dir, retryRecSize, putRetry, getRetry)
	}
	return err
}

// groupChunk writes chunk c's records to their groups.
func (a *analyzer) groupChunk(c *history.History) {
	al, rt := a.groups.allowed, a.groups.retries
	for i := range c.Len() {
		o := c.Outcome(i)
		if o == decision.Dropped {
			continue // never sent
		}
		id := a.identity(c, i)
		switch {
		case o == decision.Allowed:
			s, r := a.decidedBetween(c, i)
			al.add(id, allowedRec{s: s, r: r, id: id, round: c.Round(i)})
		case o == decision.Error && c.By(i) == decision.ByUnanswered:
			s, r := a.decidedBetween(c, i)
			al.add(id, allowedRec{s: s, r: r, id: id, round: maybeRound})
		}
		if rt != nil {
			rt.add(id, a.retryRecOf(c, i))
		}
	}
}

// finish writes what the groups still buffer.
func (g *groups) finish() error {
	if err := g.allowed.finish(); err != nil {
		return err
	}
	if g.retries != nil {
		return g.retries.finish()
	}
	return nil
}

// close removes the analysis's scratch files.
func (a *analyzer) close() {
	if a.groups != nil {
		a.groups.allowed.close()
		a.groups.retries.close()
	}
}

// group computes the figures of group k's identities.
func (w *worker) group(k int) {
	a, g := w.a, w.a.groups.allowed
	rg := g.ranges[k]
	visitAll := func(visit visitFn, rs []allowedRec) {
		for j := range rs {
			r := &rs[j]
			if r.round == maybeRound {
				visit(r.s, r.r, history.NoRound, true)
			} else {
				visit(r.s, r.r, r.round, false)
			}
		}
	}
	if rg.hi-rg.lo == 1 && g.counts[k] > int64(a.budget.group) {
		// One identity over the budget: stream its records from disk.
		w.identity(rg.lo, func(visit visitFn) {
			if err := g.each(k, &w.block, &w.recs, func(rs []allowedRec) { visitAll(visit, rs) }); err != nil {
				w.err = cmp.Or(w.err, err)
			}
		})
		return
	}
	off, err := g.load(k, &w.block, &w.recs, &w.byID, func(r *allowedRec) uint32 { return r.id })
	if err != nil {
		w.err = err
		return
	}
	for id := rg.lo; id < rg.hi; id++ {
		part := w.byID[off[id-rg.lo]:off[id-rg.lo+1]]
		w.identity(id, func(visit visitFn) { visitAll(visit, part) })
	}
}

// retryGroups adds every identity of a spilled history to the retry
// figures, a group at a time. An identity is held whole in memory here,
// 70 bytes a request that ran: the retry figures relate its requests in
// ways a sorted stream does not serve.
func (a *analyzer) retryGroups(acc *retryAcc) error {
	g := a.groups.retries
	var raw []byte
	var recs, byID []retryRec
	for k, rg := range g.ranges {
		off, err := g.load(k, &raw, &recs, &byID, func(r *retryRec) uint32 { return r.id })
		if err != nil {
			return err
		}
		for id := rg.lo; id < rg.hi; id++ {
			acc.identity(id, byID[off[id-rg.lo]:off[id-rg.lo+1]])
		}
	}
	return nil
}
