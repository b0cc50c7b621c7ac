package history

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"time"
	"unsafe"

	"github.com/rlctl/rlctl/internal/atomicfile"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
)

// The file format, all integers little-endian:
//
//	magic    "RLCTLHST"
//	version  uint16 (FileVersion), flags uint16 (0, or flagRetries)
//	meta     uint32 length, then that many bytes of JSON (fileMeta)
//	count    uint64 number of records n
//	columns  intended int64×n; sent, received, decided, retry-after int32×n
//	         (the packed form of store.go, so reading is a copy, not a
//	         conversion); identity uint32×n; round int32×n; gateway
//	         uint16×n; endpoint, outcome, by uint8×n
//	big      for each of the 4 packed columns: uint32 count, int64×count
//	retries  only with flagRetries: attempt uint8×n; told, waited int32×n
//	         (packed); then for each of those 2: uint32 count, int64×count
//	crc      uint32 CRC-32 (Castagnoli) of every byte before it
//
// A history without retries is written exactly as before the retry
// columns existed, so every rlctl reads it; one with retries sets
// flagRetries, which an rlctl that predates them refuses (unknown flags)
// rather than misreads. Likewise a history whose dropped requests are
// tallied in its meta (Meta.Drops) sets flagDrops, since an rlctl that
// predates the tally would count none. A new layout gets a new version; Read refuses
// versions and flags it does not know rather than guess.
const (
	fileMagic = "RLCTLHST"
	// FileVersion is the history file format version this package writes.
	FileVersion = 1
	maxMetaLen  = 64 << 20
	// readChunk bounds how much Read allocates ahead of the data actually
	// present, so a corrupt count cannot ask for terabytes.
	readChunk = 1 << 16
	// flagRetries marks a file that carries the retry columns.
	flagRetries = 1
	// flagDrops marks a file whose meta tallies dropped requests.
	flagDrops = 2
)

// ErrFormat is wrapped by every error Read returns for input that is not a
// valid history file (as opposed to an I/O error).
var ErrFormat = errors.New("not a valid rlctl history file")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileMeta is Meta as stored: explicit units, so a zero limit or a time
// zone survive the trip unchanged.
type fileMeta struct {
	Scenario     string        `json:"scenario"`
	StartNanos   int64         `json:"start_unix_ns"`
	LimitCount   int64         `json:"limit_count"`
	LimitWindow  int64         `json:"limit_window_ns"`
	Identities   []string      `json:"identities"`
	Shards       []string      `json:"shards,omitempty"`
	Gateways     []string      `json:"gateways"`
	Endpoints    []string      `json:"endpoints"`
	Boundaries   []int64       `json:"boundaries_ns,omitempty"`
	BoundarySpan int64         `json:"boundary_span_ns,omitempty"`
	Faults       []fileFault   `json:"faults,omitempty"`
	Rounds       int           `json:"rounds,omitempty"`
	Workers      int           `json:"workers,omitempty"`
	HeaderForms  []string      `json:"header_forms,omitempty"`
	Retry        string        `json:"retry,omitempty"`
	Segment      string        `json:"segment,omitempty"`
	LateNanos    int64         `json:"late_ns,omitempty"`
	WallMoved    int64         `json:"wall_moved_ns,omitempty"`
	RedisMoved   int64         `json:"redis_moved_ns,omitempty"`
	ClockOffset  int64         `json:"clock_offset_ns,omitempty"`
	ClockError   int64         `json:"clock_uncertainty_ns,omitempty"`
	ClockRef     string        `json:"clock_reference,omitempty"`
	Drops        *fileDrops    `json:"drops,omitempty"`
	Aims         []fileAim     `json:"boundary_aims,omitempty"`
	Statuses     map[int]int64 `json:"statuses,omitempty"`
}

// fileDrops is Meta.Drops as stored; each slice is [from_ns, to_ns, count].
type fileDrops struct {
	Identities []int64    `json:"identities"`
	Gateways   []int64    `json:"gateways"`
	Endpoints  []int64    `json:"endpoints"`
	Slices     [][3]int64 `json:"slices"`
}

type fileFault struct {
	At       int64  `json:"at_ns"`
	For      int64  `json:"for_ns"`
	Planned  int64  `json:"planned_ns,omitempty"`
	Action   string `json:"action"`
	Stopped  int64  `json:"stopped_ns,omitempty"`
	Answered int64  `json:"answered_ns,omitempty"`
	Demoted  int64  `json:"demoted_ns,omitempty"`
	Held     int64  `json:"held_ns,omitempty"`
	Read     int64  `json:"read_ns,omitempty"`
	Shard    string `json:"shard,omitempty"`
}

// fileAim is an Aim in the meta JSON.
type fileAim struct {
	How         string `json:"how"`
	Uncertainty int64  `json:"uncertainty_ns"`
}

func toFileMeta(m Meta) fileMeta {
	fm := fileMeta{
		Scenario: m.Scenario, LimitCount: m.Limit.Count, LimitWindow: int64(m.Limit.Window),
		Identities: m.Identities, Shards: m.Shards, Gateways: m.Gateways, Endpoints: m.Endpoints,
		BoundarySpan: int64(m.BoundarySpan), Rounds: m.Rounds, Workers: m.Workers,
		HeaderForms: m.HeaderForms, Retry: m.Retry, Statuses: m.Statuses,
		Segment: m.Segment, LateNanos: int64(m.Late), WallMoved: int64(m.WallMoved), RedisMoved: int64(m.RedisMoved),
		ClockOffset: int64(m.Clock.Offset), ClockError: int64(m.Clock.Uncertainty), ClockRef: m.Clock.Reference,
	}
	if !m.Start.IsZero() {
		fm.StartNanos = m.Start.UnixNano()
	}
	for _, b := range m.Boundaries {
		fm.Boundaries = append(fm.Boundaries, int64(b))
	}
	for _, a := range m.Aims {
		fm.Aims = append(fm.Aims, fileAim{How: a.How, Uncertainty: int64(a.Uncertainty)})
	}
	if d := m.Drops; !d.Empty() {
		fd := &fileDrops{Identities: d.Identity, Gateways: d.Gateway, Endpoints: d.Endpoint}
		for _, s := range d.Slices {
			fd.Slices = append(fd.Slices, [3]int64{int64(s.From), int64(s.To), s.Count})
		}
		fm.Drops = fd
	}
	for _, f := range m.Faults {
		fm.Faults = append(fm.Faults, fileFault{At: int64(f.At), For: int64(f.For), Planned: int64(f.Planned), Action: f.Action,
			Stopped: int64(f.Stopped), Answered: int64(f.Answered), Demoted: int64(f.Demoted), Held: int64(f.Held), Read: int64(f.Read), Shard: f.Shard})
	}
	return fm
}

func (fm fileMeta) meta() Meta {
	m := Meta{
		Scenario: fm.Scenario, Limit: rate.Limit{Count: fm.LimitCount, Window: time.Duration(fm.LimitWindow)},
		Identities: fm.Identities, Shards: fm.Shards, Gateways: fm.Gateways, Endpoints: fm.Endpoints,
		BoundarySpan: time.Duration(fm.BoundarySpan), Rounds: fm.Rounds, Workers: fm.Workers,
		HeaderForms: fm.HeaderForms, Retry: fm.Retry, Statuses: fm.Statuses,
		Segment: fm.Segment, Late: time.Duration(fm.LateNanos), WallMoved: time.Duration(fm.WallMoved), RedisMoved: time.Duration(fm.RedisMoved),
		Clock: Clock{Offset: time.Duration(fm.ClockOffset), Uncertainty: time.Duration(fm.ClockError), Reference: fm.ClockRef},
	}
	if fm.StartNanos != 0 {
		m.Start = time.Unix(0, fm.StartNanos).UTC()
	}
	for _, b := range fm.Boundaries {
		m.Boundaries = append(m.Boundaries, time.Duration(b))
	}
	if len(fm.Aims) == len(fm.Boundaries) {
		for _, a := range fm.Aims {
			m.Aims = append(m.Aims, Aim{How: a.How, Uncertainty: time.Duration(a.Uncertainty)})
		}
	}
	if fd := fm.Drops; fd != nil {
		m.Drops = Drops{Identity: fd.Identities, Gateway: fd.Gateways, Endpoint: fd.Endpoints}
		for _, s := range fd.Slices {
			m.Drops.Slices = append(m.Drops.Slices, DropSlice{From: time.Duration(s[0]), To: time.Duration(s[1]), Count: s[2]})
		}
	}
	for _, f := range fm.Faults {
		m.Faults = append(m.Faults, Fault{At: time.Duration(f.At), For: time.Duration(f.For), Planned: time.Duration(f.Planned), Action: f.Action,
			Stopped: time.Duration(f.Stopped), Answered: time.Duration(f.Answered), Demoted: time.Duration(f.Demoted), Held: time.Duration(f.Held),
			Read: time.Duration(f.Read), Shard: f.Shard})
	}
	return m
}

// crcWriter counts and checksums what passes through it.
type crcWriter struct {
	w   io.Writer
	crc hash.Hash32
	n   int64
	err error
}

func (c *crcWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.crc.Write(p[:n])
	c.n += int64(n)
	c.err = err
	return n, err
}

// startFile writes a history file's header for h to w, through a buffer
// and a checksum; it returns both and the file's flags.
func (h *History) startFile(w io.Writer) (*bufio.Writer, *crcWriter, uint16, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	cw := &crcWriter{w: bw, crc: crc32.New(castagnoli)}
	meta, err := json.Marshal(toFileMeta(h.Meta))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("encode history meta: %w", err)
	}
	var flags uint16
	if h.HasRetries() {
		flags |= flagRetries
	}
	if !h.Meta.Drops.Empty() {
		flags |= flagDrops
	}
	cw.Write(fileHeader(flags, meta, h.Len()))
	return bw, cw, flags, nil
}

// finish writes the checksum of everything before it and flushes bw, the
// buffer under c; it returns the bytes written and the first error.
func (c *crcWriter) finish(bw *bufio.Writer) (int64, error) {
	if c.err == nil {
		crc := binary.LittleEndian.AppendUint32(nil, c.crc.Sum32())
		n, err := bw.Write(crc)
		c.n += int64(n)
		c.err = err
	}
	if c.err == nil {
		c.err = bw.Flush()
	}
	if c.err != nil {
		return c.n, fmt.Errorf("write history: %w", c.err)
	}
	return c.n, nil
}

// WriteTo writes the history in the binary file format. It implements
// io.WriterTo.
func (h *History) WriteTo(w io.Writer) (int64, error) {
	if h.disk != nil {
		return h.disk.writeTo(w)
	}
	if h.Spilled() {
		return h.writeSpilled(w)
	}
	bw, cw, flags, err := h.startFile(w)
	if err != nil {
		return 0, err
	}
	writeRows(cw, h.t, 8, func(t *times) uint64 { return uint64(t.intended) })
	writeRows(cw, h.t, 4, func(t *times) uint64 { return uint64(t.sent) })
	writeRows(cw, h.t, 4, func(t *times) uint64 { return uint64(t.received) })
	writeRows(cw, h.t, 4, func(t *times) uint64 { return uint64(t.decided) })
	writeRows(cw, h.t, 4, func(t *times) uint64 { return uint64(t.retryAfter) })
	writeColumn(cw, h.identity)
	writeColumn(cw, h.round)
	writeColumn(cw, h.gateway)
	writeColumn(cw, h.endpoint)
	writeColumn(cw, h.outcome)
	writeColumn(cw, h.by)
	writeBig := func(cols []time.Duration) {
		cw.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(cols))))
		writeColumn(cw, cols)
	}
	for _, b := range h.big[:numPacked] {
		writeBig(b)
	}
	if flags&flagRetries != 0 {
		writeColumn(cw, h.attempt)
		writeRows(cw, h.retry, 4, func(r *retryTimes) uint64 { return uint64(r.told) })
		writeRows(cw, h.retry, 4, func(r *retryTimes) uint64 { return uint64(r.waited) })
		for _, b := range h.big[numPacked:] {
			writeBig(b)
		}
	}
	return cw.finish(bw)
}

// fileHeader is a file's magic, version, flags, meta and record count.
func fileHeader(flags uint16, meta []byte, n int) []byte {
	var hdr []byte
	hdr = append(hdr, fileMagic...)
	hdr = binary.LittleEndian.AppendUint16(hdr, FileVersion)
	hdr = binary.LittleEndian.AppendUint16(hdr, flags)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(meta)))
	hdr = append(hdr, meta...)
	return binary.LittleEndian.AppendUint64(hdr, uint64(n))
}

// writeSpilled writes a spilled history in the same format as one in
// memory, a column at a time: one pass over the chunks per column, each
// copying the column's bytes from the spill file (a chunk on disk holds
// them in the file's own form), so memory stays one chunk's column. A
// chunk with large values is decoded instead: a packed value that refers
// to its chunk's table of them is renumbered into the file's table.
func (h *History) writeSpilled(w io.Writer) (int64, error) {
	bw, cw, flags, err := h.startFile(w)
	if err != nil {
		return 0, err
	}
	var big [numCols][]time.Duration
	repack := func(c *History, col int, p int32) uint64 {
		if p&3 == tagSpecial && p>>2 > 0 {
			big[col] = append(big[col], c.big[col][p>>2-1])
			p = int32(len(big[col]))<<2 | tagSpecial
		}
		return uint64(uint32(p))
	}
	// Column k: copied as it is from each chunk on disk, or written by
	// fn from a chunk decoded (one with large values) and the tail.
	k := 0
	pass := func(fn func(c *History)) error {
		defer func() { k++ }()
		return h.columnPass(k, func(b []byte) error {
			cw.Write(b)
			return cw.err
		}, func(c *History) error {
			fn(c)
			return cw.err
		})
	}
	packed := func(col int, get func(*times) int32) func(c *History) {
		return func(c *History) {
			writeRows(cw, c.t, 4, func(t *times) uint64 { return repack(c, col, get(t)) })
		}
	}
	passes := []func(c *History){
		func(c *History) { writeRows(cw, c.t, 8, func(t *times) uint64 { return uint64(t.intended) }) },
		packed(colSent, func(t *times) int32 { return t.sent }),
		packed(colReceived, func(t *times) int32 { return t.received }),
		packed(colDecided, func(t *times) int32 { return t.decided }),
		packed(colRetry, func(t *times) int32 { return t.retryAfter }),
		func(c *History) { writeColumn(cw, c.identity) },
		func(c *History) { writeColumn(cw, c.round) },
		func(c *History) { writeColumn(cw, c.gateway) },
		func(c *History) { writeColumn(cw, c.endpoint) },
		func(c *History) { writeColumn(cw, c.outcome) },
		func(c *History) { writeColumn(cw, c.by) },
	}
	writeBig := func(cols []time.Duration) {
		cw.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(cols))))
		writeColumn(cw, cols)
	}
	for _, p := range passes {
		if err := pass(p); err != nil {
			return cw.n, fmt.Errorf("write history: %w", err)
		}
	}
	for _, b := range big[:numPacked] {
		writeBig(b)
	}
	if flags&flagRetries != 0 {
		// A chunk without retries holds first attempts only: zeros.
		retryCol := func(col int, get func(*retryTimes) int32) func(c *History) {
			return func(c *History) {
				if c.retry == nil {
					writeColumn(cw, make([]int32, c.Len()))
					return
				}
				writeRows(cw, c.retry, 4, func(r *retryTimes) uint64 { return repack(c, col, get(r)) })
			}
		}
		passes := []func(c *History){
			func(c *History) {
				if c.attempt == nil {
					writeColumn(cw, make([]uint8, c.Len()))
					return
				}
				writeColumn(cw, c.attempt)
			},
			retryCol(colTold, func(r *retryTimes) int32 { return r.told }),
			retryCol(colWaited, func(r *retryTimes) int32 { return r.waited }),
		}
		for _, p := range passes {
			if err := pass(p); err != nil {
				return cw.n, fmt.Errorf("write history: %w", err)
			}
		}
		for _, b := range big[numPacked:] {
			writeBig(b)
		}
	}
	return cw.finish(bw)
}

type fixed interface {
	~int64 | ~uint64 | ~int32 | ~uint32 | ~uint16 | ~uint8
}

// writeColumn writes s in chunks through a small buffer, so saving ten
// million records does not need a second copy of them.
func writeColumn[T fixed](w io.Writer, s []T) {
	size := sizeOf[T]()
	var buf [4096]byte
	for len(s) > 0 {
		k := min(len(s), len(buf)/size)
		for i, v := range s[:k] {
			putFixed(buf[i*size:], size, v)
		}
		w.Write(buf[:k*size])
		s = s[k:]
	}
}

// writeRows writes one field of every row as a column of size-byte values.
func writeRows[R any](w io.Writer, rows []R, size int, get func(*R) uint64) {
	var buf [4096]byte
	for len(rows) > 0 {
		k := min(len(rows), len(buf)/size)
		for i := range rows[:k] {
			putFixed(buf[i*size:], size, get(&rows[i]))
		}
		w.Write(buf[:k*size])
		rows = rows[k:]
	}
}

// readRows reads a column of 4-byte values into one field of every row.
func readRows[R any](r io.Reader, rows []R, set func(*R, int32)) error {
	var buf [4096]byte
	for len(rows) > 0 {
		k := min(len(rows), len(buf)/4)
		if _, err := io.ReadFull(r, buf[:4*k]); err != nil {
			return err
		}
		for i := range rows[:k] {
			set(&rows[i], int32(binary.LittleEndian.Uint32(buf[4*i:])))
		}
		rows = rows[k:]
	}
	return nil
}

func putFixed[T fixed](b []byte, size int, v T) {
	switch size {
	case 8:
		binary.LittleEndian.PutUint64(b, uint64(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	default:
		b[0] = byte(v)
	}
}

func sizeOf[T fixed]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// crcReader checksums what it reads.
type crcReader struct {
	r   io.Reader
	crc hash.Hash32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	return n, err
}

func formatErr(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s: truncated", ErrFormat, what)
	}
	if err != nil {
		return fmt.Errorf("read history %s: %w", what, err)
	}
	return fmt.Errorf("%w: %s", ErrFormat, what)
}

// metaErr says where a file's meta is not the JSON this package writes,
// without quoting it: encoding/json's errors carry pieces of the input.
func metaErr(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%w: meta: not valid JSON at byte %d", ErrFormat, syn.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("%w: meta: field %s has the wrong type", ErrFormat, typ.Field)
	}
	return fmt.Errorf("%w: meta: not the JSON rlctl writes", ErrFormat)
}

// parseHeader checks a file's first 16 bytes and returns its flags and
// meta length.
func parseHeader(hdr [16]byte) (flags uint16, metaLen uint32, err error) {
	if string(hdr[:8]) != fileMagic {
		// What the file holds instead is not quoted: the path may lead
		// anywhere (a link to /etc/shadow), and an error is printed.
		return 0, 0, fmt.Errorf("%w: it does not start with %q (want a history rlctl verify saved, format version %d)", ErrFormat, fileMagic, FileVersion)
	}
	if v := binary.LittleEndian.Uint16(hdr[8:]); v != FileVersion {
		return 0, 0, fmt.Errorf("%w: version %d, this rlctl reads version %d", ErrFormat, v, FileVersion)
	}
	flags = binary.LittleEndian.Uint16(hdr[10:])
	if flags&^(flagRetries|flagDrops) != 0 {
		return 0, 0, fmt.Errorf("%w: unknown flags %#x", ErrFormat, flags)
	}
	metaLen = binary.LittleEndian.Uint32(hdr[12:])
	if metaLen > maxMetaLen {
		return 0, 0, fmt.Errorf("%w: meta length %d too large", ErrFormat, metaLen)
	}
	return flags, metaLen, nil
}

// Read reads a history written by WriteTo. Input that is not a history
// file, of another version, truncated or corrupt gives an error wrapping
// ErrFormat, never a panic.
func Read(r io.Reader) (*History, error) {
	cr := &crcReader{r: bufio.NewReaderSize(r, 1<<16), crc: crc32.New(castagnoli)}
	var hdr [8 + 2 + 2 + 4]byte
	if _, err := io.ReadFull(cr, hdr[:]); err != nil {
		return nil, formatErr("header", err)
	}
	flags, metaLen, err := parseHeader(hdr)
	if err != nil {
		return nil, err
	}
	metaBytes, err := readBytes(cr, int(metaLen))
	if err != nil {
		return nil, formatErr("meta", err)
	}
	var fm fileMeta
	if err := json.Unmarshal(metaBytes, &fm); err != nil {
		return nil, metaErr(err)
	}
	var cnt [8]byte
	if _, err := io.ReadFull(cr, cnt[:]); err != nil {
		return nil, formatErr("record count", err)
	}
	n64 := binary.LittleEndian.Uint64(cnt[:])
	if n64 > 1<<40 {
		return nil, fmt.Errorf("%w: record count %d too large", ErrFormat, n64)
	}
	n := int(n64)
	h := &History{Meta: fm.meta()}
	steps := []struct {
		name string
		read func() error
	}{
		{"intended", func() error {
			// The first column proves the count: rows are made only
			// once that many values actually arrived.
			in, err := readColumn[time.Duration](cr, n)
			if err != nil {
				return err
			}
			h.t = make([]times, n)
			for i, v := range in {
				h.t[i].intended = v
			}
			return nil
		}},
		{"sent", func() error { return readRows(cr, h.t, func(t *times, v int32) { t.sent = v }) }},
		{"received", func() error { return readRows(cr, h.t, func(t *times, v int32) { t.received = v }) }},
		{"decided", func() error { return readRows(cr, h.t, func(t *times, v int32) { t.decided = v }) }},
		{"retry-after", func() error { return readRows(cr, h.t, func(t *times, v int32) { t.retryAfter = v }) }},
		{"identity", func() (err error) { h.identity, err = readColumn[uint32](cr, n); return }},
		{"round", func() (err error) { h.round, err = readColumn[int32](cr, n); return }},
		{"gateway", func() (err error) { h.gateway, err = readColumn[uint16](cr, n); return }},
		{"endpoint", func() (err error) { h.endpoint, err = readColumn[uint8](cr, n); return }},
		{"outcome", func() (err error) { h.outcome, err = readColumn[decision.Outcome](cr, n); return }},
		{"by", func() (err error) { h.by, err = readColumn[decision.By](cr, n); return }},
	}
	for _, s := range steps {
		if err := s.read(); err != nil {
			return nil, formatErr(s.name+" column", err)
		}
	}
	readBig := func(col int) error {
		var c [4]byte
		if _, err := io.ReadFull(cr, c[:]); err != nil {
			return formatErr("large values", err)
		}
		k := int(binary.LittleEndian.Uint32(c[:]))
		if k > payloadMax {
			return fmt.Errorf("%w: %d large values", ErrFormat, k)
		}
		if h.big[col], err = readColumn[time.Duration](cr, k); err != nil {
			return formatErr("large values", err)
		}
		return nil
	}
	for col := range numPacked {
		if err := readBig(col); err != nil {
			return nil, err
		}
	}
	if flags&flagRetries != 0 {
		if h.attempt, err = readColumn[uint8](cr, n); err != nil {
			return nil, formatErr("attempt column", err)
		}
		h.retry = make([]retryTimes, n)
		if err := readRows(cr, h.retry, func(r *retryTimes, v int32) { r.told = v }); err != nil {
			return nil, formatErr("told column", err)
		}
		if err := readRows(cr, h.retry, func(r *retryTimes, v int32) { r.waited = v }); err != nil {
			return nil, formatErr("waited column", err)
		}
		for col := numPacked; col < numCols; col++ {
			if err := readBig(col); err != nil {
				return nil, err
			}
		}
	}
	want := cr.crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(cr.r, sum[:]); err != nil {
		return nil, formatErr("checksum", err)
	}
	if got := binary.LittleEndian.Uint32(sum[:]); got != want {
		return nil, fmt.Errorf("%w: checksum mismatch (file corrupt)", ErrFormat)
	}
	if err := h.validate(); err != nil {
		return nil, err
	}
	return h, nil
}

// validate checks what the checksum cannot: that a well-formed file holds
// values this package can decode.
func (h *History) validate() error {
	for i := range h.t {
		t := &h.t[i]
		for c, p := range [numPacked]int32{t.sent, t.received, t.decided, t.retryAfter} {
			if p&3 == tagSpecial {
				if k := int(p >> 2); k < 0 || k > len(h.big[c]) {
					return fmt.Errorf("%w: record %d refers to large value %d of %d", ErrFormat, i, k, len(h.big[c]))
				}
			}
		}
	}
	for i, rt := range h.retry {
		for j, p := range [2]int32{rt.told, rt.waited} {
			c := numPacked + j
			if p&3 == tagSpecial {
				if k := int(p >> 2); k < 0 || k > len(h.big[c]) {
					return fmt.Errorf("%w: record %d refers to large value %d of %d", ErrFormat, i, k, len(h.big[c]))
				}
			}
		}
	}
	for i, o := range h.outcome {
		if o > decision.Dropped {
			return fmt.Errorf("%w: record %d has unknown outcome %d", ErrFormat, i, o)
		}
	}
	return h.Meta.check()
}

// check is validate for a file's meta.
func (m *Meta) check() error {
	if m.Limit.Count < 0 || m.Limit.Window < 0 {
		return fmt.Errorf("%w: negative limit %d/%d", ErrFormat, m.Limit.Count, m.Limit.Window)
	}
	if n := len(m.Shards); n != 0 && n != len(m.Identities) {
		return fmt.Errorf("%w: %d shards for %d identities", ErrFormat, n, len(m.Identities))
	}
	if err := m.Drops.Check(len(m.Identities), len(m.Gateways), len(m.Endpoints)); err != nil {
		return fmt.Errorf("%w: drops: %v", ErrFormat, err)
	}
	return nil
}

func readBytes(r io.Reader, n int) ([]byte, error) {
	var out []byte
	for len(out) < n {
		k := min(n-len(out), readChunk)
		start := len(out)
		out = append(out, make([]byte, k)...)
		if _, err := io.ReadFull(r, out[start:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readColumn reads n values, growing the slice only as data arrives.
func readColumn[T fixed](r io.Reader, n int) ([]T, error) {
	size := sizeOf[T]()
	out := make([]T, 0, min(n, readChunk))
	var buf [4096]byte
	for len(out) < n {
		k := min(n-len(out), len(buf)/size)
		b := buf[:k*size]
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		for i := 0; i < k; i++ {
			out = append(out, decodeFixed[T](b[i*size:], size))
		}
	}
	return out, nil
}

func decodeFixed[T fixed](b []byte, size int) T {
	switch size {
	case 8:
		return T(binary.LittleEndian.Uint64(b))
	case 4:
		return T(binary.LittleEndian.Uint32(b))
	case 2:
		return T(binary.LittleEndian.Uint16(b))
	}
	return T(b[0])
}

// WriteFile saves the history at path atomically: it writes a temporary
// file in the same directory and renames it, so a reader never sees half a
// file and an interrupted save leaves any previous file intact.
func (h *History) WriteFile(path string) error {
	err := atomicfile.WriteFunc(path, func(w io.Writer) error {
		_, err := h.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	return nil
}

// ReadFile reads a history saved by WriteFile.
func ReadFile(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	h, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("read history %s: %w", path, err)
	}
	return h, nil
}
