package history

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
)

// randomRecord makes a record whose times cover every packed unit and the
// large-value table, including NoTime.
func randomRecord(rng *rand.Rand) Record {
	dur := func() time.Duration {
		switch rng.IntN(6) {
		case 0:
			return NoTime
		case 1:
			return time.Duration(rng.Int64N(int64(time.Second))) // ns range, mostly
		case 2:
			return time.Duration(rng.Int64N(int64(10 * time.Minute)))
		case 3:
			return time.Duration(rng.Int64N(int64(200 * time.Hour)))
		case 4:
			return -time.Duration(rng.Int64N(int64(time.Minute)))
		}
		return time.Duration(rng.Int64N(int64(30 * 24 * time.Hour)))
	}
	in := time.Duration(rng.Int64N(int64(time.Hour)))
	off := func() time.Duration {
		d := dur()
		if d == NoTime {
			return NoTime
		}
		return in + d
	}
	return Record{
		Intended: in, Sent: off(), Received: off(), Decided: off(), RetryAfter: dur(),
		Identity: rng.Uint32N(100), Round: int32(rng.IntN(10)) - 1, Gateway: uint16(rng.IntN(50)),
		Endpoint: uint8(rng.IntN(3)), Outcome: decision.Outcome(rng.IntN(5)), By: decision.By(rng.IntN(7)),
	}
}

// packedWant is what a History keeps of d (an offset or RetryAfter): exact
// below half a second, else rounded down to µs or ms by size.
func packedWant(d time.Duration) time.Duration {
	switch {
	case d >= payloadMin && d <= payloadMax:
		return d
	case floorDiv(int64(d), 1e3) >= payloadMin && floorDiv(int64(d), 1e3) <= payloadMax:
		return time.Duration(floorDiv(int64(d), 1e3)) * time.Microsecond
	case floorDiv(int64(d), 1e6) >= payloadMin && floorDiv(int64(d), 1e6) <= payloadMax:
		return time.Duration(floorDiv(int64(d), 1e6)) * time.Millisecond
	}
	return d
}

func wantStored(r Record) Record {
	off := func(t time.Duration) time.Duration {
		if t == NoTime {
			return NoTime
		}
		return r.Intended + packedWant(t-r.Intended)
	}
	w := r
	w.Sent, w.Received, w.Decided = off(r.Sent), off(r.Received), off(r.Decided)
	if r.RetryAfter != NoTime {
		w.RetryAfter = packedWant(r.RetryAfter)
	}
	// Told and Waited belong to retries; a first attempt reads back zero.
	w.Told, w.Waited = 0, 0
	if r.Attempt > 0 {
		w.Told, w.Waited = NoTime, NoTime
		if r.Told != NoTime {
			w.Told = packedWant(r.Told)
		}
		if r.Waited != NoTime {
			w.Waited = packedWant(r.Waited)
		}
	}
	return w
}

func TestAppendAtPrecision(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	h := New(Meta{}, 0)
	var want []Record
	for range 20000 {
		r := randomRecord(rng)
		h.Append(r)
		want = append(want, wantStored(r))
	}
	if h.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", h.Len(), len(want))
	}
	for i, w := range want {
		if got := h.At(i); got != w {
			t.Fatalf("At(%d) = %+v, want %+v", i, got, w)
		}
		if h.Sent(i) != w.Sent || h.Received(i) != w.Received || h.Decided(i) != w.Decided ||
			h.RetryAfter(i) != w.RetryAfter || h.Intended(i) != w.Intended || h.Outcome(i) != w.Outcome {
			t.Fatalf("column accessors disagree with At(%d)", i)
		}
	}
}

func TestShortTimesExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    Record
	}{
		{"typical", Record{Intended: 5 * time.Second, Sent: 5*time.Second + 3, Received: 5*time.Second + 1234567, Decided: NoTime, RetryAfter: 250 * time.Millisecond}},
		{"sent before intended", Record{Intended: time.Hour, Sent: time.Hour - 7, Received: time.Hour + 9, Decided: time.Hour + 8, RetryAfter: NoTime}},
		{"zero", Record{}},
		{"whole seconds retry", Record{Intended: 1, Sent: 1, Received: 1, Decided: NoTime, RetryAfter: 3 * time.Hour}},
		{"huge", Record{Intended: 0, Sent: 0, Received: 400 * 24 * time.Hour, Decided: NoTime, RetryAfter: 1000 * 24 * time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(Meta{}, 1)
			h.Append(tt.r)
			if got := h.At(0); got != tt.r {
				t.Fatalf("At(0) = %+v, want %+v", got, tt.r)
			}
		})
	}
}

func TestAppendNoAllocAfterGrow(t *testing.T) {
	h := New(Meta{}, 1000)
	r := Record{Intended: time.Second, Sent: time.Second, Received: time.Second + time.Millisecond, Decided: NoTime, RetryAfter: NoTime}
	allocs := testing.AllocsPerRun(500, func() { h.Append(r) })
	if allocs != 0 {
		t.Fatalf("Append allocates %.1f times per call with capacity reserved", allocs)
	}
}

func sampleHistory(rng *rand.Rand, n int) *History {
	h := New(Meta{
		Scenario: "s", Start: time.Date(2026, 11, 29, 10, 0, 0, 123, time.UTC),
		Limit:      rate.Limit{Count: 20, Window: time.Second},
		Identities: []string{"a", "b"}, Shards: []string{"127.0.0.1:7001", "127.0.0.1:7002"},
		Gateways: []string{"g0", "g1", "g2"}, Endpoints: []string{"e"},
		Boundaries: []time.Duration{time.Second, 2 * time.Second}, BoundarySpan: 50 * time.Millisecond,
		Faults: []Fault{{At: time.Second, For: 2 * time.Second, Action: "redis-down"},
			{At: 3 * time.Second, Action: "kill-primary", Stopped: 3 * time.Second, Answered: 4200 * time.Millisecond, Demoted: 4500 * time.Millisecond, Held: 2010 * time.Millisecond, Read: 4230 * time.Millisecond, Shard: "127.0.0.1:7001"}}, Rounds: 3,
	}, n)
	for range n {
		h.Append(randomRecord(rng))
	}
	// And requests dropped, tallied without a record.
	for k := range n / 10 {
		h.Meta.Drops.Add(time.Duration(k)*time.Millisecond, uint32(k%2), uint16(k%3), 0)
	}
	return h
}

func equalHistories(t *testing.T, got, want *History) {
	t.Helper()
	if !got.Meta.Start.Equal(want.Meta.Start) {
		t.Fatalf("Start = %v, want %v", got.Meta.Start, want.Meta.Start)
	}
	gm, wm := got.Meta, want.Meta
	gm.Start, wm.Start = time.Time{}, time.Time{}
	if !reflect.DeepEqual(gm, wm) {
		t.Fatalf("Meta = %+v, want %+v", gm, wm)
	}
	if got.Len() != want.Len() {
		t.Fatalf("Len = %d, want %d", got.Len(), want.Len())
	}
	for i := range want.Len() {
		if got.At(i) != want.At(i) {
			t.Fatalf("record %d = %+v, want %+v", i, got.At(i), want.At(i))
		}
	}
}

func TestFileRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 5000} {
		h := sampleHistory(rng, n)
		var buf bytes.Buffer
		written, err := h.WriteTo(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if written != int64(buf.Len()) {
			t.Fatalf("WriteTo reported %d bytes, wrote %d", written, buf.Len())
		}
		back, err := Read(&buf)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		equalHistories(t, back, h)
	}
}

func TestWriteReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "run.rlh")
	h := sampleHistory(rand.New(rand.NewPCG(5, 6)), 300)
	if err := h.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	equalHistories(t, back, h)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries after WriteFile, want only the history (temp file left behind?)", len(entries))
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("ReadFile of a missing file succeeded")
	}
}

func TestReadRejects(t *testing.T) {
	t.Parallel()
	var good bytes.Buffer
	if _, err := sampleHistory(rand.New(rand.NewPCG(7, 8)), 50).WriteTo(&good); err != nil {
		t.Fatal(err)
	}
	g := good.Bytes()
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(g)) }
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "header: truncated"},
		{"bad magic", mutate(func(b []byte) []byte { b[0] = 'X'; return b }), `does not start with "RLCTLHST"`},
		{"future version", mutate(func(b []byte) []byte { b[8] = 9; return b }), "version 9"},
		{"truncated", g[:len(g)/2], "truncated"},
		{"no checksum", g[:len(g)-4], "checksum: truncated"},
		{"flipped bit", mutate(func(b []byte) []byte { b[len(b)-20] ^= 1; return b }), "checksum mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.in))
			if err == nil {
				t.Fatal("Read succeeded")
			}
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	for _, n := range []int{0, 1, 4} {
		var buf bytes.Buffer
		sampleHistory(rand.New(rand.NewPCG(uint64(n), 1)), n).WriteTo(&buf)
		f.Add(buf.Bytes())
	}
	f.Add([]byte(fileMagic))
	var retries bytes.Buffer
	rh, _ := withRetries(rand.New(rand.NewPCG(9, 9)), 6)
	rh.WriteTo(&retries)
	f.Add(retries.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		// Whatever Read accepts must be fully readable and re-encode to
		// the same bytes.
		for i := range h.Len() {
			_ = h.At(i)
		}
		var out bytes.Buffer
		if _, err := h.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		back, err := Read(&out)
		if err != nil {
			t.Fatalf("re-read of an accepted history failed: %v", err)
		}
		if back.Len() != h.Len() {
			t.Fatalf("re-read has %d records, want %d", back.Len(), h.Len())
		}
	})
}

func TestWriteFileFailureKeepsOldFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "run.rlh")
	old := sampleHistory(rand.New(rand.NewPCG(9, 9)), 10)
	if err := old.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should be makes the rename fail after the
	// temporary file was written.
	if err := New(Meta{}, 0).WriteFile(filepath.Join(dir, "missing-dir", "x.rlh")); err == nil {
		t.Fatal("WriteFile into a missing directory succeeded")
	}
	sub := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(sub, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := old.WriteFile(sub); err == nil {
		t.Fatal("WriteFile over a non-empty directory succeeded")
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	equalHistories(t, back, old)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "run.rlh" && e.Name() != "taken" {
			t.Errorf("left behind %s", e.Name())
		}
	}
}
