package history

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"unsafe"
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
	// Chunk is the records per chunk on disk; 0 is ChunkLen, or Keep when
	// that is smaller.
	Chunk int
}

// InMemory is the most records a run (or a merge, or a re-rendering) keeps
// in memory (78 MB of them): one that may hold more spills the rest to disk
// in chunks as it records (History.Spill), or reads a saved one in place
// (OpenFile), so a soak run's memory stays flat.
const InMemory = 1 << 21

// DiskBytesPerRetry is what a history with retries adds to each record on
// disk, beside its packed in-memory form (BytesPerRecord: writing a chunk
// is a copy); each chunk adds a header of about 200 bytes.
const DiskBytesPerRetry = 1 + 4 + 4

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

// chunkAt is where one chunk lies in the spill file, and what a save
// needs to copy its columns without decoding it.
type chunkAt struct {
	off, size int64
	n         int
	cols      int64        // offset of its first column within it
	big       [numCols]int // its large values per packed column
	retries   bool         // it holds the retry columns
}

// column is where column k of the file format (0-10 the fixed columns,
// 11-13 the retry ones) lies in the chunk, its bytes per record and the
// packed column whose large values it may refer to (-1 for none).
func (at chunkAt) column(k int) (off int64, size, packed int) {
	n := int64(at.n)
	fixed := [...]struct {
		at     int64
		size   int
		packed int
	}{{0, 8, -1}, {8, 4, colSent}, {12, 4, colReceived}, {16, 4, colDecided}, {20, 4, colRetry},
		{24, 4, -1}, {28, 4, -1}, {32, 2, -1}, {34, 1, -1}, {35, 1, -1}, {36, 1, -1}}
	if k < len(fixed) {
		f := fixed[k]
		return at.off + at.cols + f.at*n, f.size, f.packed
	}
	r := at.off + at.cols + 37*n
	for col := range numPacked {
		r += 4 + 8*int64(at.big[col])
	}
	switch k {
	case 11:
		return r, 1, -1
	case 12:
		return r + n, 4, colTold
	}
	return r + 5*n, 4, colWaited
}

// columnPass serves a save column k of every record: raw gets the bytes
// of each chunk on disk that can be copied as they are (zeros for a chunk
// without the retry columns), decoded each chunk whose values refer to its
// own large values, decoded, and last the tail in memory.
func (h *History) columnPass(k int, raw func([]byte) error, decoded func(*History) error) error {
	sp := h.sp
	chunks, f, err := sp.written()
	if err != nil {
		return err
	}
	var buf []byte
	c := &History{}
	for _, at := range chunks {
		off, size, packed := at.column(k)
		buf = resize(buf, size*at.n)
		switch {
		case k >= 11 && !at.retries:
			clear(buf)
		case packed < 0 || at.big[packed] == 0:
			if _, err := f.ReadAt(buf, off); err != nil {
				return fmt.Errorf("read spilled history: %w", err)
			}
		default:
			raw := make([]byte, at.size)
			if _, err := f.ReadAt(raw, at.off); err != nil {
				return fmt.Errorf("read spilled history: %w", err)
			}
			if err := c.decodeChunk(raw); err != nil {
				return err
			}
			if err := decoded(c); err != nil {
				return err
			}
			continue
		}
		if err := raw(buf); err != nil {
			return err
		}
	}
	if sp.tail.Len() > 0 {
		return decoded(sp.tail)
	}
	return nil
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
		if o.Keep > 0 {
			chunk = min(chunk, o.Keep)
		}
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
func (h *History) Spilled() bool { return h.disk != nil || h.sp != nil && h.sp.tail != nil }

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
			at := chunkAt{off: sp.end, size: n, n: c.Len(), retries: c.attempt != nil}
			if meta, merr := json.Marshal(toFileMeta(c.Meta)); merr == nil {
				at.cols = int64(16 + len(meta) + 8) // see fileHeader
			}
			for col := range at.big {
				at.big[col] = len(c.big[col])
			}
			sp.mu.Lock()
			if err != nil {
				sp.err = fmt.Errorf("spill history: %w", err)
				sp.removeLocked()
			} else {
				sp.chunks = append(sp.chunks, at)
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

// written waits for the queued chunks to reach the file and returns them
// with the file, or the write error, or an error when h was closed.
func (sp *spill) written() ([]chunkAt, *os.File, error) {
	sp.pending.Wait()
	sp.mu.Lock()
	chunks, f, err := sp.chunks, sp.f, sp.err
	sp.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if f == nil {
		return nil, nil, errors.New("read spilled history: closed")
	}
	return chunks, f, nil
}

// Chunks calls fn with h's records in order, a piece at a time, each piece
// an in-memory History (with no Meta) that fn may read but must not keep:
// a history in memory is one piece, h itself; a spilled one is read back
// chunk by chunk, the next read while fn works on the last. It stops at
// fn's first error, or a read error, and returns it.
func (h *History) Chunks(fn func(c *History) error) error {
	if h.disk != nil {
		return h.disk.chunks(fn)
	}
	sp := h.sp
	if sp == nil || sp.tail == nil {
		return fn(h)
	}
	chunks, f, err := sp.written()
	if err != nil {
		return err
	}
	type piece struct {
		c   *History
		err error
	}
	// Three pieces take turns: one fn reads, one waits, one is being read
	// into, so the columns' memory is reused and the collector idles.
	next := make(chan piece, 1)
	spare := make(chan *History, 3)
	raws := map[*History][]byte{} // each piece's bytes, read by the goroutine only
	for range 3 {
		spare <- &History{}
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(next)
		for _, at := range chunks {
			var c *History
			select {
			case c = <-spare:
			case <-stop:
				return
			}
			raw := raws[c]
			if int64(cap(raw)) < at.size {
				raw = make([]byte, at.size)
				raws[c] = raw
			}
			_, err := f.ReadAt(raw[:at.size], at.off)
			if err == nil {
				err = c.decodeChunk(raw[:at.size])
			}
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
		spare <- p.c
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
	if d := h.disk; d != nil {
		if d.f == nil {
			return nil
		}
		err := d.f.Close()
		d.f = nil
		return err
	}
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

// decodeChunk reads a chunk the spill wrote (a history file of its own,
// whole in b) into h, reusing h's columns: one read and tight loops over
// the bytes, instead of Read's checks against arbitrary input. The
// checksum is still verified.
func (h *History) decodeChunk(b []byte) error {
	bad := func(what string) error { return fmt.Errorf("%w: spill chunk: %s", ErrFormat, what) }
	if len(b) < 8+2+2+4+8+4 || string(b[:8]) != fileMagic {
		return bad("header")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return bad("checksum mismatch")
	}
	flags := binary.LittleEndian.Uint16(b[10:])
	p := 16 + int(binary.LittleEndian.Uint32(b[12:]))
	if p+8 > len(body) {
		return bad("meta")
	}
	n := int(binary.LittleEndian.Uint64(body[p:]))
	p += 8
	take := func(size int) []byte {
		if p < 0 || size < 0 || p+size > len(body) {
			p = -1
			return nil
		}
		s := body[p : p+size]
		p += size
		return s
	}
	var cols [numFileCols][]byte
	for k := range fileCols {
		if k >= 11 && flags&flagRetries == 0 {
			break
		}
		cols[k] = take(fileCols[k].size * n)
		if k == 10 {
			// The large values lie between the fixed and the retry columns.
			for col := range numPacked {
				h.big[col] = readBig(h.big[col], take)
			}
		}
	}
	if flags&flagRetries != 0 {
		for col := numPacked; col < numCols; col++ {
			h.big[col] = readBig(h.big[col], take)
		}
	}
	if p < 0 {
		return bad("truncated")
	}
	h.setColumns(n, &cols)
	if p != len(body) {
		return bad("length")
	}
	return nil
}

// littleEndian is true where a fixed-size column's bytes in the file
// format are its bytes in memory.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// asBytes is s's memory as bytes, for copying a column in one move.
func asBytes[T fixed](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*sizeOf[T]())
}

// resize returns s with length n, reusing its memory when it can.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
