package analysis

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
)

// A sorted sequence of times is read through a cursor, whether it is a
// slice in memory or the merge of sorted runs a sorter wrote to disk, so
// the window sweeps are written once for both.

// cursor reads a sorted sequence of times in blocks.
type cursor struct {
	buf []int64
	i   int
	// fill returns the next block, nil at the end; nil for a slice.
	fill func() []int64
}

func sliceCursor(s []int64) *cursor { return &cursor{buf: s} }

// peek returns the next value without consuming it.
func (c *cursor) peek() (int64, bool) {
	if c.i < len(c.buf) {
		return c.buf[c.i], true
	}
	return c.refill()
}

func (c *cursor) refill() (int64, bool) {
	for c.fill != nil {
		c.buf, c.i = c.fill(), 0
		if c.buf == nil {
			c.fill = nil
			break
		}
		if len(c.buf) > 0 {
			return c.buf[0], true
		}
	}
	return 0, false
}

// next consumes and returns the next value.
func (c *cursor) next() (int64, bool) {
	v, ok := c.peek()
	if ok {
		c.i++
	}
	return v, ok
}

// skipWhile consumes the values v with keep(v) and returns how many. On a
// slice it binary-searches.
func (c *cursor) skipWhile(keep func(int64) bool) int {
	if c.fill == nil {
		rest := c.buf[c.i:]
		k := sort.Search(len(rest), func(j int) bool { return !keep(rest[j]) })
		c.i += k
		return k
	}
	n := 0
	for v, ok := c.peek(); ok && keep(v); v, ok = c.peek() {
		c.i++
		n++
	}
	return n
}

// blockLen is the values a cursor reads at a time from a run on disk.
const blockLen = 4096

// sorter collects times and gives them back sorted. Held in memory, it is a
// slice sorted in place; given a limit, it writes each limit-sized run
// sorted to a scratch file and merges the runs as it is read, so memory
// stays limit values whatever it holds.
type sorter struct {
	buf   []int64
	limit int    // 0: no limit
	dir   string // scratch directory
	f     *os.File
	runs  []run
	end   int64 // bytes written to f
	n     int
	err   error
}

// run is one sorted run in a sorter's file.
type run struct {
	off int64
	n   int
}

func (s *sorter) reset() {
	s.buf, s.runs, s.end, s.n = s.buf[:0], s.runs[:0], 0, 0
}

// grow reserves room for n values (up to the limit).
func (s *sorter) grow(n int) {
	if s.limit > 0 {
		n = min(n, s.limit)
	}
	if cap(s.buf)-len(s.buf) < n {
		nb := make([]int64, len(s.buf), len(s.buf)+n)
		copy(nb, s.buf)
		s.buf = nb
	}
}

func (s *sorter) add(v int64) {
	if s.limit > 0 && len(s.buf) == s.limit {
		s.spillRun()
	}
	s.buf = append(s.buf, v)
	s.n++
}

// spillRun sorts the values held and writes them as a run.
func (s *sorter) spillRun() {
	if len(s.buf) == 0 || s.err != nil {
		s.buf = s.buf[:0]
		return
	}
	sortTimes(s.buf)
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "rlctl-analysis-*.sort")
		if err != nil {
			s.err = fmt.Errorf("analysis scratch: %w", err)
			return
		}
		os.Remove(f.Name()) // gone with the process where the system allows
		s.f = f
	}
	b := make([]byte, 8*blockLen)
	for start := 0; start < len(s.buf); start += blockLen {
		part := s.buf[start:min(start+blockLen, len(s.buf))]
		for j, v := range part {
			binary.LittleEndian.PutUint64(b[8*j:], uint64(v))
		}
		if _, err := s.f.WriteAt(b[:8*len(part)], s.end+int64(8*start)); err != nil {
			s.err = fmt.Errorf("analysis scratch: %w", err)
			return
		}
	}
	s.runs = append(s.runs, run{off: s.end, n: len(s.buf)})
	s.end += int64(8 * len(s.buf))
	s.buf = s.buf[:0]
}

// sort finishes adding: the values held are sorted, and written as the
// last run when earlier ones were.
func (s *sorter) sort() {
	if len(s.runs) == 0 {
		sortTimes(s.buf)
		return
	}
	s.spillRun()
}

// close removes the scratch file.
func (s *sorter) close() {
	if s.f != nil {
		name := s.f.Name()
		s.f.Close()
		os.Remove(name)
		s.f = nil
	}
}

// cursor reads the sorted values; each call starts from the first.
func (s *sorter) cursor() *cursor {
	if len(s.runs) == 0 {
		return sliceCursor(s.buf)
	}
	cs := make([]*cursor, len(s.runs))
	for k, r := range s.runs {
		cs[k] = s.runCursor(r)
	}
	return mergeCursors(cs...)
}

// runCursor reads one run from the file, a block at a time.
func (s *sorter) runCursor(r run) *cursor {
	off, left := r.off, r.n
	b := make([]byte, 8*blockLen)
	vals := make([]int64, blockLen)
	return &cursor{fill: func() []int64 {
		if left == 0 || s.err != nil {
			return nil
		}
		k := min(left, blockLen)
		if _, err := s.f.ReadAt(b[:8*k], off); err != nil && err != io.EOF {
			s.err = fmt.Errorf("analysis scratch: %w", err)
			return nil
		}
		for j := range k {
			vals[j] = int64(binary.LittleEndian.Uint64(b[8*j:]))
		}
		off += int64(8 * k)
		left -= k
		return vals[:k]
	}}
}

// mergeCursors reads the sorted union (with repeats) of sorted cursors.
func mergeCursors(cs ...*cursor) *cursor {
	h := &cursorHeap{}
	for _, c := range cs {
		if _, ok := c.peek(); ok {
			h.cs = append(h.cs, c)
		}
	}
	heap.Init(h)
	out := make([]int64, 0, blockLen)
	return &cursor{fill: func() []int64 {
		if len(h.cs) == 0 {
			return nil
		}
		out = out[:0]
		for len(out) < blockLen && len(h.cs) > 0 {
			top := h.cs[0]
			v, _ := top.next()
			out = append(out, v)
			if _, ok := top.peek(); ok {
				heap.Fix(h, 0)
			} else {
				heap.Pop(h)
			}
		}
		return out
	}}
}

type cursorHeap struct{ cs []*cursor }

func (h *cursorHeap) Len() int { return len(h.cs) }
func (h *cursorHeap) Less(i, j int) bool {
	a, _ := h.cs[i].peek()
	b, _ := h.cs[j].peek()
	return a < b
}
func (h *cursorHeap) Swap(i, j int) { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *cursorHeap) Push(x any)    { h.cs = append(h.cs, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}

// diffCursor reads a minus b, both sorted, b a sub-multiset of a.
func diffCursor(a, b *cursor) *cursor {
	out := make([]int64, 0, blockLen)
	return &cursor{fill: func() []int64 {
		out = out[:0]
		for len(out) < blockLen {
			v, ok := a.next()
			if !ok {
				break
			}
			if w, ok := b.peek(); ok && w == v {
				b.i++
				continue
			}
			out = append(out, v)
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}}
}

// sortAll sorts each sorter's values, side by side when they are many:
// one identity with millions of allowed requests (a fail-open run)
// otherwise leaves the other CPUs idle.
func sortAll(ss ...*sorter) {
	if ss[0].n < parallelSort {
		for _, s := range ss {
			s.sort()
		}
		return
	}
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.sort()
		}()
	}
	wg.Wait()
}
