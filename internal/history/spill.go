package history

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ChunkLen is the number of records in each chunk a spilling history
// writes to disk by default (about 2.4 MB of them).
const ChunkLen = 1 << 16

// SpillOptions says where and from when a history spills (see Spill).
type SpillOptions struct {
	// Dir holds the spill file; "" is os.TempDir().
	Dir string
	// Keep is how many records stay in memory before the first spill (at
	// least one chunk).
	Keep int
	// Chunk is the records per chunk on disk; 0 is ChunkLen.
	Chunk int
}

// DiskBytesPerRecord is what a spilled record takes on disk: its packed
// in-memory form, so writing a chunk is a copy. A history with retries adds
// DiskBytesPerRetry a record; each chunk adds a header of about 200 bytes.
const (
	DiskBytesPerRecord = BytesPerRecord
	DiskBytesPerRetry  = 1 + 4 + 4
)

// spillQueue is how many full chunks may wait for the writer before Append
// waits for the disk: memory stays bounded when the disk is slower than the
// run.
const spillQueue = 4

// removeEarly removes the spill file as soon as it is open; tests turn it
// off to see the file removed by Close or by a failed write.
var removeEarly = true

// spill is a spilling history's disk side: the chunks written so far to a
// temporary file, by a goroutine of its own.
type spill struct {
	dir   string
	keep  int
	chunk int
	f     *os.File
	path  string // "" once removed

	// tail collects the records after the spill started, up to ChunkLen;
	// nil until h's own columns first exceed keep.
	tail    *History
	queued  int // records handed to the writer
	retries bool

	queue   chan *History
	free    chan *History
	pending sync.WaitGroup // chunks queued and not yet written
	done    chan struct{}
	closed  bool

	mu     sync.Mutex
	chunks []chunkAt
	end    int64
	err    error
}

// chunkAt is where one chunk lies in the spill file.
type chunkAt struct {
	off, size int64
	n         int
}

// Spill makes h keep at most o.Keep records in memory: past that, records
// go in chunks to a temporary file in o.Dir, written by a goroutine of its own behind
// a short queue, so Append stays cheap and memory stays flat whatever the
// run's length. A history that never grows past Keep stays in memory as
// before and never touches the file.
//
// A spilled history is read through Chunks (Analyze does); its per-record
// accessors (At, Sent, ...) serve only a history in memory. Close removes
// the file; call it when the history is no longer needed.
func (h *History) Spill(o SpillOptions) error {
	if h.sp != nil {
		return errors.New("history already spills")
	}
	dir, chunk := o.Dir, o.Chunk
	if chunk <= 0 {
		chunk = ChunkLen
	}
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "rlctl-history-*.spill")
	if err != nil {
		return fmt.Errorf("spill history: %w", err)
	}
	sp := &spill{
		dir: dir, keep: max(o.Keep, chunk), chunk: chunk, f: f, path: f.Name(),
		queue: make(chan *History, spillQueue), free: make(chan *History, spillQueue+1),
		done: make(chan struct{}),
	}
	// Where the system allows removing an open file, the spill leaves
	// nothing behind even if the process dies; elsewhere Close removes it.
	if removeEarly && os.Remove(sp.path) == nil {
		sp.path = ""
	}
	go sp.write()
	h.sp = sp
	return nil
}

// SpillDir is the directory h spills to, "" when it keeps everything in
// memory: where analysis puts its own scratch files.
func (h *History) SpillDir() string {
	if h.sp == nil {
		return ""
	}
	return h.sp.dir
}

// Spilled reports whether part of h lives on disk (read it with Chunks).
func (h *History) Spilled() bool { return h.sp != nil && h.sp.tail != nil }

// appendSpill is Append for a spilling history.
func (h *History) appendSpill(r Record) {
	sp := h.sp
	if sp.tail == nil {
		if len(h.outcome) < sp.keep {
			h.appendMem(r)
			return
		}
		// The first spill: h's own columns become the first chunk, and
		// records collect in chunk-sized tails from now on.
		first := &History{}
		first.takeColumns(h)
		sp.enqueue(first)
		sp.tail = New(Meta{}, sp.chunk)
	}
	sp.tail.appendMem(r)
	if sp.tail.Len() == sp.chunk {
		full := sp.tail
		select {
		case sp.tail = <-sp.free:
		default:
			sp.tail = New(Meta{}, sp.chunk)
		}
		sp.enqueue(full)
	}
}

// takeColumns moves src's records into h, leaving src empty.
func (h *History) takeColumns(src *History) {
	h.t, h.identity, h.round, h.gateway = src.t, src.identity, src.round, src.gateway
	h.endpoint, h.outcome, h.by, h.big = src.endpoint, src.outcome, src.by, src.big
	h.attempt, h.retry = src.attempt, src.retry
	*src = History{Meta: src.Meta, sp: src.sp}
}

func (sp *spill) enqueue(c *History) {
	sp.queued += c.Len()
	if c.attempt != nil {
		sp.retries = true
	}
	sp.pending.Add(1)
	sp.queue <- c
}

// write is the writer goroutine: it appends each queued chunk to the file
// and hands chunk-sized buffers back for reuse.
func (sp *spill) write() {
	defer close(sp.done)
	bw := bufio.NewWriterSize(sp.f, 1<<20)
	for c := range sp.queue {
		sp.mu.Lock()
		failed := sp.err != nil
		sp.mu.Unlock()
		if !failed {
			n, err := c.WriteTo(bw)
			if err == nil {
				err = bw.Flush()
			}
			sp.mu.Lock()
			if err != nil {
				sp.err = fmt.Errorf("spill history: %w", err)
				sp.removeLocked()
			} else {
				sp.chunks = append(sp.chunks, chunkAt{off: sp.end, size: n, n: c.Len()})
				sp.end += n
			}
			sp.mu.Unlock()
		}
		if cap(c.outcome) == sp.chunk {
			c.reset()
			select {
			case sp.free <- c:
			default:
			}
		}
		sp.pending.Done()
	}
}

// reset empties h's columns, keeping their memory.
func (h *History) reset() {
	h.t, h.identity, h.round, h.gateway = h.t[:0], h.identity[:0], h.round[:0], h.gateway[:0]
	h.endpoint, h.outcome, h.by = h.endpoint[:0], h.outcome[:0], h.by[:0]
	for c := range h.big {
		h.big[c] = nil
	}
	h.attempt, h.retry = nil, nil
}

// removeLocked closes and removes the spill file (sp.mu held).
func (sp *spill) removeLocked() {
	if sp.f != nil {
		sp.f.Close()
		sp.f = nil
	}
	if sp.path != "" {
		if err := os.Remove(sp.path); err != nil && !errors.Is(err, os.ErrNotExist) && sp.err == nil {
			sp.err = fmt.Errorf("remove history spill: %w", err)
		}
		sp.path = ""
	}
}

// Chunks calls fn with h's records in order, a piece at a time, each piece
// an in-memory History (with no Meta) that fn may read but must not keep:
// a history in memory is one piece, h itself; a spilled one is read back
// chunk by chunk, the next read while fn works on the last. It stops at
// fn's first error, or a read error, and returns it.
func (h *History) Chunks(fn func(c *History) error) error {
	sp := h.sp
	if sp == nil || sp.tail == nil {
		return fn(h)
	}
	sp.pending.Wait()
	sp.mu.Lock()
	chunks, f, err := sp.chunks, sp.f, sp.err
	sp.mu.Unlock()
	if err != nil {
		return err
	}
	if f == nil {
		return errors.New("read spilled history: closed")
	}
	type piece struct {
		c   *History
		err error
	}
	next := make(chan piece, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(next)
		for _, at := range chunks {
			c, err := Read(io.NewSectionReader(f, at.off, at.size))
			if err != nil {
				err = fmt.Errorf("read spilled history: %w", err)
			}
			select {
			case next <- piece{c, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for p := range next {
		if p.err != nil {
			return p.err
		}
		if err := fn(p.c); err != nil {
			return err
		}
	}
	if sp.tail.Len() > 0 {
		return fn(sp.tail)
	}
	return nil
}

// Close releases what h holds on disk: it waits for the writer, then
// removes the spill file. It returns the first error spilling met. A
// history in memory has nothing to close. Close is idempotent.
func (h *History) Close() error {
	sp := h.sp
	if sp == nil {
		return nil
	}
	if !sp.closed {
		sp.closed = true
		close(sp.queue)
		<-sp.done
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.removeLocked()
	return sp.err
}
