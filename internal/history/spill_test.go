package history

import (
	"bytes"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
)

// testChunk keeps the tests' chunks small, so they spill many.
const testChunk = 512

// spillPair appends the same n random records to a history in memory and
// to one that spills past keep, with retries from record retryFrom on
// (never when negative).
func spillPair(t *testing.T, dir string, n, keep, retryFrom int, seed uint64) (mem, sp *History) {
	t.Helper()
	meta := Meta{Scenario: "spill", Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"a", "b"}}
	mem = New(meta, 0)
	sp = New(meta, 0)
	if err := sp.Spill(SpillOptions{Dir: dir, Keep: keep, Chunk: testChunk}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := range n {
		r := randomRecord(rng)
		if retryFrom >= 0 && i >= retryFrom && rng.IntN(2) == 0 {
			r.Attempt, r.Told, r.Waited = uint8(1+rng.IntN(3)), time.Duration(rng.Int64N(int64(10*24*time.Hour))), NoTime
		}
		mem.Append(r)
		sp.Append(r)
	}
	return mem, sp
}

func TestSpilledHistoryReadsBackWhatWasAppended(t *testing.T) {
	for _, tc := range []struct {
		name           string
		n, keep, retry int
		wantSpilled    bool
	}{
		{"below keep: stays in memory", testChunk / 2, testChunk, -1, false},
		{"several chunks and a tail", 3*testChunk + 1234, testChunk, -1, true},
		{"retries from the third chunk", 3*testChunk + 7, testChunk, 2*testChunk + 5, true},
		{"retries from the start", 2*testChunk + 1, 2 * testChunk, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mem, sp := spillPair(t, dir, tc.n, tc.keep, tc.retry, uint64(tc.n))
			defer sp.Close()
			if sp.Spilled() != tc.wantSpilled || sp.Len() != mem.Len() || sp.HasRetries() != mem.HasRetries() {
				t.Fatalf("spilled %v len %d retries %v, want %v %d %v", sp.Spilled(), sp.Len(), sp.HasRetries(), tc.wantSpilled, mem.Len(), mem.HasRetries())
			}
			// Twice: a second read gives the same records.
			for range 2 {
				i, pieces := 0, 0
				err := sp.Chunks(func(c *History) error {
					pieces++
					for j := range c.Len() {
						if got, want := c.At(j), mem.At(i); got != want {
							t.Fatalf("record %d: got %+v, want %+v", i, got, want)
						}
						i++
					}
					return nil
				})
				if err != nil || i != mem.Len() {
					t.Fatalf("read %d of %d records: %v", i, mem.Len(), err)
				}
				if tc.wantSpilled && pieces < 2 {
					t.Fatalf("read in %d pieces", pieces)
				}
			}
			// Saved, the spilled history is the same file byte for byte.
			var a, b bytes.Buffer
			if _, err := mem.WriteTo(&a); err != nil {
				t.Fatal(err)
			}
			if _, err := sp.WriteTo(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("spilled history saves %d bytes differing from the in-memory one's %d", b.Len(), a.Len())
			}
			back, err := Read(&b)
			if err != nil || !reflect.DeepEqual(back.Meta, mem.Meta) || back.Len() != mem.Len() {
				t.Fatalf("saved spilled history reads back wrong: %v", err)
			}
		})
	}
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestSpillFileRemoved runs with the early removal off, so the file stays
// visible until Close or a failed write removes it.
func TestSpillFileRemoved(t *testing.T) {
	removeEarly = false
	defer func() { removeEarly = true }()

	dir := t.TempDir()
	_, sp := spillPair(t, dir, 2*testChunk+10, testChunk, -1, 1)
	if err := sp.Chunks(func(*History) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := dirEntries(t, dir); len(got) != 1 {
		t.Fatalf("while in use the spill directory holds %v, want the one spill file", got)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dirEntries(t, dir); len(got) != 0 {
		t.Fatalf("after Close the spill directory holds %v", got)
	}
	if err := sp.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	// A write that fails removes the file at once and is reported.
	dir = t.TempDir()
	_, sp = spillPair(t, dir, testChunk+1, testChunk, -1, 2)
	sp.sp.pending.Wait()
	sp.sp.mu.Lock()
	sp.sp.f.Close() // the disk goes away under the writer
	sp.sp.mu.Unlock()
	for range 2 * testChunk {
		sp.Append(Record{Sent: NoTime, Received: NoTime, Decided: NoTime, RetryAfter: NoTime})
	}
	if err := sp.Chunks(func(*History) error { return nil }); err == nil {
		t.Fatal("reading a history whose spill failed: no error")
	}
	if got := dirEntries(t, dir); len(got) != 0 {
		t.Fatalf("after a failed write the spill directory holds %v", got)
	}
	if err := sp.Close(); err == nil {
		t.Fatal("Close after a failed write: no error")
	}
}

func TestMergeRefusesSpilled(t *testing.T) {
	mem, sp := spillPair(t, t.TempDir(), testChunk+1, testChunk, -1, 3)
	defer sp.Close()
	if _, err := Merge(mem, sp); err == nil {
		t.Fatal("merged a spilled history")
	}
}

func TestSpillChunkDefaults(t *testing.T) {
	for _, tc := range []struct{ keep, chunk, want int }{
		{0, 0, ChunkLen}, {ChunkLen * 4, 0, ChunkLen}, {100, 0, 100}, {100, 10, 10},
	} {
		h := New(Meta{}, 0)
		if err := h.Spill(SpillOptions{Dir: t.TempDir(), Keep: tc.keep, Chunk: tc.chunk}); err != nil {
			t.Fatal(err)
		}
		if h.sp.chunk != tc.want || h.sp.keep < h.sp.chunk {
			t.Errorf("keep %d chunk %d: chunks of %d keeping %d, want chunks of %d", tc.keep, tc.chunk, h.sp.chunk, h.sp.keep, tc.want)
		}
		h.Close()
	}
}

// TestSpilledSaveCopiesColumns: chunks without large values are saved by
// copying their columns' bytes; the file is the in-memory one's, byte for
// byte, with and without retries, and with one chunk that has large values
// among them.
func TestSpilledSaveCopiesColumns(t *testing.T) {
	for _, retries := range []bool{false, true} {
		meta := Meta{Scenario: "copy", Identities: []string{"a"}}
		mem, sp := New(meta, 0), New(meta, 0)
		if err := sp.Spill(SpillOptions{Dir: t.TempDir(), Keep: testChunk, Chunk: testChunk}); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 7))
		for i := range 5*testChunk + 17 {
			at := time.Duration(i) * time.Millisecond
			r := Record{Intended: at, Sent: at + time.Duration(rng.IntN(1000)), Received: at + time.Duration(rng.IntN(1e6)),
				Decided: NoTime, RetryAfter: time.Duration(rng.IntN(1e9)), Identity: uint32(rng.IntN(9)), Round: NoRound,
				Gateway: uint16(rng.IntN(3)), Outcome: decision.Outcome(1 + rng.IntN(4))}
			if i == 2*testChunk+3 {
				r.RetryAfter = 30 * 24 * time.Hour // a large value in the third chunk
			}
			if retries && i > testChunk && rng.IntN(3) == 0 {
				r.Attempt, r.Told, r.Waited = 1, time.Duration(rng.IntN(1e9)), time.Duration(rng.IntN(1e9))
			}
			mem.Append(r)
			sp.Append(r)
		}
		var a, b bytes.Buffer
		if _, err := mem.WriteTo(&a); err != nil {
			t.Fatal(err)
		}
		if _, err := sp.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		if !sp.Spilled() || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("retries %v: spilled save (%d bytes) differs from the in-memory one (%d)", retries, b.Len(), a.Len())
		}
		sp.Close()
	}
}
