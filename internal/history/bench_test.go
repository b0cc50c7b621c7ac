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
