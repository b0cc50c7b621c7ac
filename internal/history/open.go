package history

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"
)

// fileCols are the file format's per-record columns in order: their bytes
// per record. Columns 11-13 (attempt, told, waited) exist only with
// flagRetries, after the four packed columns' large values.
var fileCols = [...]struct{ size int }{
	{8}, {4}, {4}, {4}, {4}, // intended; sent, received, decided, retry-after
	{4}, {4}, {2}, {1}, {1}, {1}, // identity, round, gateway, endpoint, outcome, by
	{1}, {4}, {4}, // attempt, told, waited
}

const numFileCols = len(fileCols)

// setColumns fills h with n records from their columns' bytes in the file
// format (cols as fileCols numbers them; the retry ones nil when the
// records have none), reusing h's memory. h.big must already hold the
// large values the packed columns refer to.
func (h *History) setColumns(n int, cols *[numFileCols][]byte) {
	le := binary.LittleEndian
	h.t = resize(h.t, n)
	in, sent, recv, dec, ra := cols[0], cols[1], cols[2], cols[3], cols[4]
	for i := range h.t {
		h.t[i] = times{
			intended: time.Duration(le.Uint64(in[8*i:])),
			sent:     int32(le.Uint32(sent[4*i:])), received: int32(le.Uint32(recv[4*i:])),
			decided: int32(le.Uint32(dec[4*i:])), retryAfter: int32(le.Uint32(ra[4*i:])),
		}
	}
	id, rd, gw := cols[5], cols[6], cols[7]
	h.identity, h.round, h.gateway = resize(h.identity, n), resize(h.round, n), resize(h.gateway, n)
	h.outcome, h.by = resize(h.outcome, n), resize(h.by, n)
	h.endpoint = append(h.endpoint[:0], cols[8]...)
	copy(asBytes(h.outcome), cols[9])
	copy(asBytes(h.by), cols[10])
	if littleEndian {
		// The columns' bytes on disk are their memory here: one copy each.
		copy(asBytes(h.identity), id)
		copy(asBytes(h.round), rd)
		copy(asBytes(h.gateway), gw)
	} else {
		for i := range n {
			h.identity[i] = le.Uint32(id[4*i:])
			h.round[i] = int32(le.Uint32(rd[4*i:]))
			h.gateway[i] = le.Uint16(gw[2*i:])
		}
	}
	h.attempt, h.retry = nil, nil
	if cols[11] == nil {
		return
	}
	h.attempt = append(h.attempt[:0], cols[11]...)
	h.retry = resize(h.retry, n)
	told, waited := cols[12], cols[13]
	for i := range h.retry {
		h.retry[i] = retryTimes{int32(le.Uint32(told[4*i:])), int32(le.Uint32(waited[4*i:]))}
	}
}

// readBig reads one column's large values (a uint32 count, then int64s)
// with take into s's memory; take returns nil when the bytes run out.
func readBig(s []time.Duration, take func(int) []byte) []time.Duration {
	c := take(4)
	if c == nil {
		return s[:0]
	}
	k := int(binary.LittleEndian.Uint32(c))
	v := take(8 * k)
	if v == nil {
		return s[:0]
	}
	s = resize(s, k)
	for j := range s {
		s[j] = time.Duration(binary.LittleEndian.Uint64(v[8*j:]))
	}
	return s
}

// onDisk is a history file read in place (see OpenFile).
type onDisk struct {
	f       *os.File
	layout  chunkAt // the whole file as one chunk: where each column lies
	big     [numCols][]time.Duration
	retries bool
}

// OpenFile opens a history saved by WriteFile. One of at most keep
// records is read whole, as ReadFile does. A longer one stays on disk: its
// checksum is verified in one streaming pass, and Chunks then reads it
// back ChunkLen records at a time, as it does a spilled history, so
// analysing it (analysis.Analyze) takes memory bounded whatever its
// length. Such a history reports Spilled; Close releases its file.
func OpenFile(path string, keep int) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	h, err := openFile(f, keep)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read history %s: %w", path, err)
	}
	if h == nil {
		f.Close()
		return ReadFile(path)
	}
	return h, nil
}

// openFile is OpenFile on an open file: nil (and no error) when the file
// holds at most keep records and should be read whole.
func openFile(f *os.File, keep int) (*History, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	var hdr [16]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return nil, formatErr("header", err)
	}
	flags, ml, err := parseHeader(hdr)
	if err != nil {
		return nil, err
	}
	metaLen := int64(ml)
	if 16+metaLen+8+4 > size {
		return nil, fmt.Errorf("%w: meta length %d in %d bytes", ErrFormat, metaLen, size)
	}
	metaBytes := make([]byte, metaLen+8)
	if _, err := f.ReadAt(metaBytes, 16); err != nil {
		return nil, formatErr("meta", err)
	}
	n64 := binary.LittleEndian.Uint64(metaBytes[metaLen:])
	// Every record takes at least 37 bytes: a count the file cannot hold
	// is corrupt, whatever keep is.
	if n64 > uint64(size)/BytesPerRecord {
		return nil, fmt.Errorf("%w: record count %d in %d bytes", ErrFormat, n64, size)
	}
	n := int(n64)
	if n <= keep {
		return nil, nil
	}
	var fm fileMeta
	if err := json.Unmarshal(metaBytes[:metaLen], &fm); err != nil {
		return nil, metaErr(err)
	}
	d := &onDisk{f: f, retries: flags&flagRetries != 0,
		layout: chunkAt{n: n, cols: 16 + metaLen + 8, retries: flags&flagRetries != 0}}
	// The large values follow the fixed columns; each table's count says
	// where the next lies.
	p := d.layout.cols + BytesPerRecord*int64(n)
	take := func(k int) []byte {
		if p < 0 || k < 0 || int64(k) > size-4-p {
			p = -1
			return nil
		}
		b := make([]byte, k)
		if _, err := f.ReadAt(b, p); err != nil {
			p = -1
			return nil
		}
		p += int64(k)
		return b
	}
	for col := range numCols {
		if col == numPacked {
			if !d.retries {
				break
			}
			p += DiskBytesPerRetry * int64(n)
		}
		d.big[col] = readBig(nil, take)
		if p < 0 {
			return nil, formatErr("large values", io.ErrUnexpectedEOF)
		}
		if col < numPacked {
			d.layout.big[col] = len(d.big[col])
		}
	}
	if p != size-4 {
		return nil, fmt.Errorf("%w: %d bytes where the columns take %d", ErrFormat, size, p+4)
	}
	crc := crc32.New(castagnoli)
	if _, err := io.Copy(crc, io.NewSectionReader(f, 0, size-4)); err != nil {
		return nil, err
	}
	var sum [4]byte
	if _, err := f.ReadAt(sum[:], size-4); err != nil {
		return nil, formatErr("checksum", err)
	}
	if binary.LittleEndian.Uint32(sum[:]) != crc.Sum32() {
		return nil, fmt.Errorf("%w: checksum mismatch (file corrupt)", ErrFormat)
	}
	h := &History{Meta: fm.meta(), disk: d}
	if err := h.Meta.check(); err != nil {
		return nil, err
	}
	return h, nil
}

// chunks is Chunks for a history read in place: ChunkLen records at a
// time, each column's part read with one ReadAt into one buffer, each
// piece checked as Read checks a whole file.
func (d *onDisk) chunks(fn func(c *History) error) error {
	if d.f == nil {
		return errors.New("read history: closed")
	}
	ncols := 11
	if d.retries {
		ncols = numFileCols
	}
	c := &History{big: d.big}
	var buf []byte
	for lo := 0; lo < d.layout.n; lo += ChunkLen {
		k := min(ChunkLen, d.layout.n-lo)
		buf = resize(buf, BytesPerRecord*k+DiskBytesPerRetry*k)
		var cols [numFileCols][]byte
		at := 0
		for j := range ncols {
			off, size, _ := d.layout.column(j)
			b := buf[at : at+size*k]
			if _, err := d.f.ReadAt(b, off+int64(size*lo)); err != nil {
				return fmt.Errorf("read history: %w", err)
			}
			cols[j] = b
			at += size * k
		}
		c.setColumns(k, &cols)
		if err := c.validate(); err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// writeTo copies the file as it is: it is already in the format.
func (d *onDisk) writeTo(w io.Writer) (int64, error) {
	st, err := d.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("write history: %w", err)
	}
	n, err := io.Copy(w, io.NewSectionReader(d.f, 0, st.Size()))
	if err != nil {
		return n, fmt.Errorf("write history: %w", err)
	}
	return n, nil
}
