package analysis

import (
	"math"
	"slices"

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
