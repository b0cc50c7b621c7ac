package history

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// chunkRecords is every record Chunks gives, in order.
func chunkRecords(t *testing.T, h *History) []Record {
	t.Helper()
	var out []Record
	if err := h.Chunks(func(c *History) error {
		for i := range c.Len() {
			out = append(out, c.At(i))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A saved history longer than keep is read in place: Chunks gives back
// every record as saved (retries and large values too), twice, a
// chunk at a time; saving it again writes the same bytes; one within keep
// is read whole.
func TestOpenFileReadsInPlace(t *testing.T) {
	t.Parallel()
	n := 2*ChunkLen + 1234
	for _, retries := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(8, 15))
		var h *History
		if retries {
			h, _ = withRetries(rng, n)
		} else {
			h = sampleHistory(rng, n)
		}
		path := filepath.Join(t.TempDir(), "h.rlh")
		if err := h.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		d, err := OpenFile(path, ChunkLen)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Spilled() || d.Len() != n || d.HasRetries() != retries {
			t.Fatalf("retries %v: spilled %v len %d retries %v", retries, d.Spilled(), d.Len(), d.HasRetries())
		}
		for range 2 {
			got := chunkRecords(t, d)
			if len(got) != n {
				t.Fatalf("retries %v: %d records, want %d", retries, len(got), n)
			}
			for i, r := range got {
				if r != h.At(i) {
					t.Fatalf("retries %v: record %d = %+v, want %+v", retries, i, r, h.At(i))
				}
			}
		}
		var again bytes.Buffer
		if _, err := d.WriteTo(&again); err != nil {
			t.Fatal(err)
		}
		if want, _ := os.ReadFile(path); !bytes.Equal(again.Bytes(), want) {
			t.Fatalf("retries %v: saving again wrote %d bytes unlike the file's %d", retries, again.Len(), len(want))
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if err := d.Chunks(func(*History) error { return nil }); err == nil {
			t.Fatal("Chunks after Close: no error")
		}
		whole, err := OpenFile(path, n)
		if err != nil {
			t.Fatal(err)
		}
		if whole.Spilled() {
			t.Fatal("a history within keep was not read whole")
		}
		equalHistories(t, whole, h)
	}
}

// OpenFile refuses what Read refuses: a flipped byte anywhere, a
// truncated file, a count the file cannot hold.
func TestOpenFileRejectsCorruptFiles(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2, 9))
	h, _ := withRetries(rng, 3000)
	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	dir := t.TempDir()
	for name, b := range map[string][]byte{
		"flipped column byte": flip(good, len(good)/2),
		"flipped checksum":    flip(good, len(good)-1),
		"truncated":           good[:len(good)-100],
		"count too large":     withCount(good, 1<<39),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenFile(path, 10); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	out := bytes.Clone(b)
	out[i] ^= 0x40
	return out
}

// withCount is b with its record count set to n.
func withCount(b []byte, n uint64) []byte {
	out := bytes.Clone(b)
	metaLen := int(out[12]) | int(out[13])<<8 | int(out[14])<<16 | int(out[15])<<24
	p := 16 + metaLen
	for j := range 8 {
		out[p+j] = byte(n >> (8 * j))
	}
	return out
}

// FuzzOpenFile: reading a file in place accepts exactly what Read accepts
// and gives the same records; it never panics on what it refuses.
func FuzzOpenFile(f *testing.F) {
	for _, n := range []int{0, 1, 40} {
		var buf bytes.Buffer
		sampleHistory(rand.New(rand.NewPCG(uint64(n), 3)), n).WriteTo(&buf)
		f.Add(buf.Bytes())
	}
	var retries bytes.Buffer
	rh, _ := withRetries(rand.New(rand.NewPCG(9, 3)), 30)
	rh.WriteTo(&retries)
	f.Add(retries.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		openAgreesWithRead(t, filepath.Join(t.TempDir(), "h.rlh"), b)
	})
}

// TestOpenFileAgreesWithRead runs FuzzOpenFile's check over 2,000
// deterministic corruptions of a saved history: bytes overwritten, the
// file cut short.
func TestOpenFileAgreesWithRead(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(40, 3))
	var buf bytes.Buffer
	h, _ := withRetries(rng, 40)
	h.WriteTo(&buf)
	dir := t.TempDir()
	accepted := 0
	for k := range 2000 {
		b := bytes.Clone(buf.Bytes())
		for range 1 + rng.IntN(3) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		if rng.IntN(3) == 0 {
			b = b[:rng.IntN(len(b))]
		}
		if k%10 == 0 {
			b = buf.Bytes() // the file as saved, now and then
		}
		if openAgreesWithRead(t, filepath.Join(dir, "h.rlh"), b) {
			accepted++
		}
	}
	if accepted < 200 {
		t.Fatalf("only %d of 2000 files accepted: the check saw too few good ones", accepted)
	}
}

// openAgreesWithRead checks that b, saved at path, is accepted by OpenFile
// read in place (and Chunks) exactly when Read accepts it, with the same
// records; it reports whether it was accepted.
func openAgreesWithRead(t *testing.T, path string, b []byte) bool {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	want, werr := Read(bytes.NewReader(b))
	d, err := OpenFile(path, 0)
	var got []Record
	if err == nil {
		defer d.Close()
		err = d.Chunks(func(c *History) error {
			for i := range c.Len() {
				got = append(got, c.At(i))
			}
			return nil
		})
	}
	if (err == nil) != (werr == nil) {
		t.Fatalf("read in place: %v; Read: %v", err, werr)
	}
	if err != nil {
		return false
	}
	if len(got) != want.Len() {
		t.Fatalf("%d records in place, Read %d", len(got), want.Len())
	}
	for i, r := range got {
		if r != want.At(i) {
			t.Fatalf("record %d in place %+v, Read %+v", i, r, want.At(i))
		}
	}
	return true
}
