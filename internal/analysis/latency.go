package analysis

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlctl/rlctl/internal/metric"
)

// Latency histograms count microseconds from 1 µs to one hour with three
// significant figures: 0.1% resolution at every scale, the same geometry
// everywhere so histograms from several machines merge exactly.
const (
	histLowest  = 1
	histHighest = 3600 * 1000 * 1000
	histDigits  = 3
)

// NewLatencyHistogram returns an empty histogram of the geometry Analyze
// uses (µs, 1 µs to 1 h, 3 significant figures).
func NewLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// recordMicros records v µs, clamping into the histogram's range: a
// negative latency (clock step) counts as 0 and one over an hour as an hour,
// so no request vanishes from the count.
func recordMicros(h *hdrhistogram.Histogram, v int64) {
	if v < 0 {
		v = 0
	}
	if v > histHighest {
		v = histHighest
	}
	_ = h.RecordValue(v) // cannot fail inside the range
}

// EncodeHistogram encodes h in the compressed V2 form that Result.Histogram
// and GatewayResult.Histogram carry: the bytes hdrhistogram's own Encode
// writes, built here so that the zlib writer (a megabyte of state) is reused
// rather than allocated for each histogram of each analysis.
func EncodeHistogram(h *hdrhistogram.Histogram) ([]byte, error) {
	s := h.Export()
	// The counts up to the highest non-zero one (at least one), as zig-zag
	// LEB128 varints with a run of zeros written as minus its length.
	limit := 1
	for i := len(s.Counts) - 1; i >= 0; i-- {
		if s.Counts[i] != 0 {
			limit = i + 1
			break
		}
	}
	counts := make([]byte, 0, 64)
	for i := 0; i < limit; {
		c := s.Counts[i]
		i++
		if c == 0 {
			zeros := int64(1)
			for i < limit && s.Counts[i] == 0 {
				zeros++
				i++
			}
			if zeros > 1 {
				c = -zeros
			}
		}
		counts = appendZigZag(counts, c)
	}
	ratio := s.IntegerToDoubleConversionRatio
	if ratio == 0 {
		ratio = 1
	}
	payload := make([]byte, 0, 40+len(counts))
	payload = binary.BigEndian.AppendUint32(payload, uint32(hdrhistogram.V2EncodingCookieBase|0x10))
	payload = binary.BigEndian.AppendUint32(payload, uint32(len(counts)))
	payload = binary.BigEndian.AppendUint32(payload, 0) // normalizing index offset
	payload = binary.BigEndian.AppendUint32(payload, uint32(s.SignificantFigures))
	payload = binary.BigEndian.AppendUint64(payload, uint64(s.LowestTrackableValue))
	payload = binary.BigEndian.AppendUint64(payload, uint64(s.HighestTrackableValue))
	payload = binary.BigEndian.AppendUint64(payload, math.Float64bits(ratio))
	payload = append(payload, counts...)

	var z bytes.Buffer
	w := zlibWriters.Get().(*zlib.Writer)
	defer zlibWriters.Put(w)
	w.Reset(&z)
	if _, err := w.Write(payload); err != nil {
		return nil, fmt.Errorf("encode latency histogram: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode latency histogram: %w", err)
	}
	raw := make([]byte, 0, 8+z.Len())
	raw = binary.BigEndian.AppendUint32(raw, uint32(hdrhistogram.V2CompressedEncodingCookieBase|0x10))
	raw = binary.BigEndian.AppendUint32(raw, uint32(z.Len()))
	raw = append(raw, z.Bytes()...)
	return base64.StdEncoding.AppendEncode(nil, raw), nil
}

// appendZigZag appends v zig-zag encoded as HdrHistogram's LEB128-64b9B:
// seven bits a byte with a continuation bit, and the ninth byte whole.
func appendZigZag(b []byte, v int64) []byte {
	u := uint64((v << 1) ^ (v >> 63))
	for range 8 {
		if u < 0x80 {
			return append(b, byte(u))
		}
		b = append(b, byte(u&0x7f)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// zlibWriters keeps best-compression zlib writers, as hdrhistogram uses.
var zlibWriters = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestCompression) // a valid level cannot fail
	return w
}}

// MergeHistograms decodes encoded latency histograms (from Result.Histogram
// of several runs or machines) and adds them into one. Counts add exactly;
// percentiles of the result are those of all the requests together, which
// averaging percentiles could never give.
func MergeHistograms(encoded ...[]byte) (*hdrhistogram.Histogram, error) {
	out := NewLatencyHistogram()
	for i, e := range encoded {
		if len(e) == 0 {
			continue // a run with no latency recorded
		}
		h, err := hdrhistogram.Decode(e)
		if err != nil {
			return nil, fmt.Errorf("decode latency histogram %d: %w", i, err)
		}
		if dropped := out.Merge(h); dropped != 0 {
			return nil, fmt.Errorf("merge latency histogram %d: %d values out of range", i, dropped)
		}
	}
	return out, nil
}

// LatencyMetrics returns p50_ms, p90_ms, p99_ms, p999_ms and max_ms of h
// (µs values), or an empty Metrics when h recorded nothing (latency does
// not apply to a run where nothing ran).
func LatencyMetrics(h *hdrhistogram.Histogram) Metrics {
	m, _ := latency(h, false)
	return m
}

var metricPercentiles = []float64{50, 90, 99, 99.9, 100}

// latency computes the metrics and, when curve is set, the percentile
// curve, in one scan of the histogram's buckets.
func latency(h *hdrhistogram.Histogram, curve bool) (Metrics, []PercentilePoint) {
	m := Metrics{}
	if h == nil || h.TotalCount() == 0 {
		return m, nil
	}
	ps := metricPercentiles
	if curve {
		ps = append(slices.Clone(ps), curvePercentiles...)
	}
	vs := h.ValueAtPercentilesSlice(ps)
	m[metric.P50], m[metric.P90], m[metric.P99], m[metric.P999], m[metric.Max] = ms(vs[0]), ms(vs[1]), ms(vs[2]), ms(vs[3]), ms(vs[4])
	var out []PercentilePoint
	for i, p := range ps[len(metricPercentiles):] {
		out = append(out, PercentilePoint{Percentile: p, Millis: ms(vs[len(metricPercentiles)+i])})
	}
	return m, out
}

func ms(us int64) float64 { return float64(us) / 1000 }

// curvePoints is how many points the percentile curve has: percentile
// 100·(1 − 10^(−k/10)) for k = 0..40, i.e. 0, 20.6, 36.9 … 99.9, … 99.99,
// evenly spaced on the log scale of the "nines" that latency charts use.
const curvePoints = 41

// curvePercentiles are 100·(1 − 10^(−k/10)) for k = 0..curvePoints-1.
var curvePercentiles = func() []float64 {
	out := make([]float64, curvePoints)
	for k := range out {
		out[k] = math.Round(100*(1-math.Pow(10, -float64(k)/10))*1e6) / 1e6
	}
	return out
}()
