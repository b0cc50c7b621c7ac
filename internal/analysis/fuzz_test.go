package analysis

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// FuzzAnalyze feeds Analyze histories with arbitrary field values - extreme
// and reversed times, NoTime anywhere, identities and gateways beyond Meta,
// unknown outcomes - as a corrupt or hand-made history file could hold. It
// must never panic or hang, and its bounds must stay ordered.
func FuzzAnalyze(f *testing.F) {
	f.Add(int64(10), int64(time.Second), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33})
	f.Add(int64(1), int64(1), make([]byte, 66))
	f.Fuzz(func(t *testing.T, count, window int64, data []byte) {
		if count < 0 || window < 0 {
			count, window = -count, -window
		}
		meta := history.Meta{Limit: rate.Limit{Count: count, Window: time.Duration(window)}, Identities: []string{"a"}, Gateways: []string{"g"},
			Boundaries: []time.Duration{0, time.Second}, BoundarySpan: time.Millisecond, Rounds: 1,
			Faults: []history.Fault{{At: time.Second, For: time.Second}}}
		h := history.New(meta, 0)
		const size = 33
		for len(data) >= size && h.Len() < 64 {
			b := data[:size]
			data = data[size:]
			i64 := func(k int) time.Duration { return time.Duration(int64(binary.LittleEndian.Uint64(b[k:]))) }
			h.Append(history.Record{
				Intended: i64(0), Sent: i64(8), Received: i64(16),
				Decided: []time.Duration{history.NoTime, i64(8)}[b[24]&1], RetryAfter: []time.Duration{history.NoTime, i64(16)}[b[24]>>1&1],
				Identity: uint32(b[25]) << (b[26] & 31), Round: int32(int8(b[27])), Gateway: uint16(b[28]) << (b[29] & 15),
				Endpoint: b[30], Outcome: decision.Outcome(b[31] % 5), By: decision.By(b[32] % 7),
			})
		}
		res := analyzed(t, h, Options{})
		m := res.Metrics
		if m[metric.Ceiling] > m[metric.CeilingUpper] {
			t.Fatalf("ceiling %v > ceiling_upper %v", m[metric.Ceiling], m[metric.CeilingUpper])
		}
		if m[metric.Requests] != float64(h.Len()) {
			t.Fatalf("requests %v, want %d", m[metric.Requests], h.Len())
		}
		if len(res.Timeline) > maxTimeline+1 || len(res.Sliding) > maxTimeline+2 {
			t.Fatalf("series too long: %d, %d", len(res.Timeline), len(res.Sliding))
		}
	})
}
