package analysis

import (
	"fmt"
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
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
// and GatewayResult.Histogram carry.
func EncodeHistogram(h *hdrhistogram.Histogram) ([]byte, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encode latency histogram: %w", err)
	}
	return b, nil
}

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
	m := Metrics{}
	if h == nil || h.TotalCount() == 0 {
		return m
	}
	m[P50] = ms(h.ValueAtQuantile(50))
	m[P90] = ms(h.ValueAtQuantile(90))
	m[P99] = ms(h.ValueAtQuantile(99))
	m[P999] = ms(h.ValueAtQuantile(99.9))
	m[Max] = ms(h.Max())
	return m
}

func ms(us int64) float64 { return float64(us) / 1000 }

// curvePoints is how many points the percentile curve has: percentile
// 100·(1 − 10^(−k/10)) for k = 0..40, i.e. 0, 20.6, 36.9 … 99.9, … 99.99,
// evenly spaced on the log scale of the "nines" that latency charts use.
const curvePoints = 41

// PercentileCurve samples h at log-spaced percentiles from 0 to 99.99.
func PercentileCurve(h *hdrhistogram.Histogram) []PercentilePoint {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	out := make([]PercentilePoint, 0, curvePoints)
	for k := range curvePoints {
		p := 100 * (1 - math.Pow(10, -float64(k)/10))
		p = math.Round(p*1e6) / 1e6
		out = append(out, PercentilePoint{Percentile: p, Millis: ms(h.ValueAtQuantile(p))})
	}
	return out
}
