package history

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
)

// withRetries makes every third record of a random history a retry, the
// first of them after some first attempts, with Told and Waited over every
// packed unit, the large-value table and NoTime.
func withRetries(rng *rand.Rand, n int) (*History, []Record) {
	h := sampleHistory(rng, 0)
	var in []Record
	h.Meta.HeaderForms = []string{"retry-after", "draft-11"}
	h.Meta.Retry = "honor retry-after, no jitter, at most 3 attempts"
	for i := range n {
		r := randomRecord(rng)
		if i%3 == 2 {
			r.Attempt = uint8(1 + rng.IntN(5))
			r.Told, r.Waited = randomRecord(rng).RetryAfter, randomRecord(rng).RetryAfter
			if i%7 == 0 {
				r.Told = 400 * time.Hour // beyond the packed millisecond range
			}
		}
		h.Append(r)
		in = append(in, r)
	}
	return h, in
}

// A history records which requests are retries and what they were told,
// keeps it through the file format and a merge, and a history without
// retries is written exactly as before the retry columns existed.
func TestRetryColumnsRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	h, in := withRetries(rng, 3000)
	if !h.HasRetries() {
		t.Fatal("HasRetries is false for a history with retries")
	}
	// What went in comes out, to the documented precision.
	var want []Record
	for i, r := range in {
		want = append(want, wantStored(r))
		if got := h.At(i); got != want[i] {
			t.Fatalf("At(%d) = %+v, want %+v", i, got, want[i])
		}
	}
	if want[0].Attempt != 0 || want[0].Told != 0 || want[0].Waited != 0 {
		t.Fatalf("first attempt reads as %+v, want attempt 0 with zero Told and Waited", want[0])
	}
	if r := want[2]; r.Attempt == 0 || r.Waited == NoTime {
		t.Fatalf("retry reads as %+v", r)
	}

	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if flags := binary.LittleEndian.Uint16(buf.Bytes()[10:]); flags != flagRetries {
		t.Fatalf("flags %#x, want the retry flag", flags)
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	equalHistories(t, back, h)
	for i := range back.Len() {
		if back.Attempt(i) != want[i].Attempt || back.Told(i) != want[i].Told || back.Waited(i) != want[i].Waited {
			t.Fatalf("record %d after the file: attempt %d told %v waited %v, want %+v", i, back.Attempt(i), back.Told(i), back.Waited(i), want[i])
		}
	}

	// Halves merged give the retries back, and the union of header forms.
	a, b := New(h.Meta, 0), New(h.Meta, 0)
	b.Meta.HeaderForms = []string{"x-ratelimit", "draft-11"}
	for i := range h.Len() {
		if i < h.Len()/2 {
			a.Append(want[i])
		} else {
			b.Append(want[i])
		}
	}
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Meta.HeaderForms; len(got) != 3 || m.Meta.Retry != h.Meta.Retry {
		t.Fatalf("merged meta: forms %v retry %q", got, m.Meta.Retry)
	}
	retries := 0
	for i := range m.Len() {
		if m.Attempt(i) > 0 {
			retries++
		}
	}
	if want := h.Len() / 3; retries != want {
		t.Fatalf("merged history has %d retries, want %d", retries, want)
	}
}

func TestNoRetriesNoRetryColumns(t *testing.T) {
	t.Parallel()
	h := sampleHistory(rand.New(rand.NewPCG(13, 14)), 200)
	h.Meta.Drops = Drops{} // they set a flag of their own (TestDropsInTheFile)
	if h.HasRetries() {
		t.Fatal("a history without retries says it has some")
	}
	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if flags := binary.LittleEndian.Uint16(buf.Bytes()[10:]); flags != 0 {
		t.Fatalf("flags %#x on a history without retries; older readers refuse any flag", flags)
	}
	// 4 + 8 + 4+4+4+4 + 4 + 4 + 2 + 1+1+1 bytes per record, and nothing
	// more than the meta, the header, the large values and the checksum.
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if back.HasRetries() || back.Told(0) != 0 || back.Attempt(0) != 0 {
		t.Fatal("a history without retries came back with retry columns")
	}
}

// A file that claims retry columns it does not hold is refused, not
// misread.
func TestReadRejectsTruncatedRetryColumns(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h, _ := withRetries(rand.New(rand.NewPCG(15, 16)), 30)
	if _, err := h.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if _, err := Read(bytes.NewReader(b[:len(b)-40])); err == nil {
		t.Fatal("a truncated history with retries was read")
	}
	b[10] = 2 // an unknown flag
	if _, err := Read(bytes.NewReader(b)); err == nil {
		t.Fatal("unknown flags accepted")
	}
}
