package history

import (
	"bytes"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
)

func BenchmarkAppend(b *testing.B) {
	h := New(Meta{}, b.N)
	r := Record{Intended: time.Second, Sent: time.Second + 3*time.Microsecond, Received: time.Second + 800*time.Microsecond,
		Decided: NoTime, RetryAfter: 250 * time.Millisecond, Outcome: decision.Allowed, By: decision.ByRedis}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r.Intended = time.Duration(i) * time.Microsecond
		h.Append(r)
	}
}

func BenchmarkWriteRead1M(b *testing.B) {
	const n = 1_000_000
	h := New(Meta{Identities: []string{"a"}}, n)
	for i := range n {
		at := time.Duration(i) * time.Microsecond
		h.Append(Record{Intended: at, Sent: at + 10, Received: at + time.Millisecond, Decided: NoTime, RetryAfter: NoTime, Outcome: decision.Denied})
	}
	var buf bytes.Buffer
	var size int64
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		var err error
		if size, err = h.WriteTo(&buf); err != nil {
			b.Fatal(err)
		}
		if _, err := Read(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)/n, "file-bytes/record")
}

// BenchmarkChunks is one pass over a spilled history of 1M records, as
// each of a spilled analysis's passes makes: read, checksum and decode
// every chunk. Reported per record.
func BenchmarkChunks(b *testing.B) {
	const n = 1_000_000
	h := New(Meta{Identities: []string{"a"}}, 0)
	if err := h.Spill(SpillOptions{Dir: b.TempDir(), Keep: ChunkLen}); err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	for i := range n {
		at := time.Duration(i) * time.Microsecond
		h.Append(Record{Intended: at, Sent: at + 10, Received: at + time.Millisecond, Decided: NoTime, RetryAfter: NoTime,
			Identity: uint32(i % 7), Gateway: uint16(i % 5), Outcome: decision.Denied})
	}
	b.ReportAllocs()
	for b.Loop() {
		seen := 0
		if err := h.Chunks(func(c *History) error { seen += c.Len(); return nil }); err != nil {
			b.Fatal(err)
		}
		if seen != n {
			b.Fatalf("saw %d of %d", seen, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
}
