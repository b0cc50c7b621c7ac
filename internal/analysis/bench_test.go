package analysis

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
)

// benchHistory is a loaded run: n requests over 100 s from 20 gateways for
// ids identities at about twice their limit, so about half are allowed,
// appended in completion order like the traffic engine does.
func benchHistory(n, ids int) *history.History {
	const gws = 20
	meta := history.Meta{Scenario: "bench", Limit: rate.Limit{Count: max(1, int64(n/ids/200)), Window: time.Second}}
	for i := range ids {
		meta.Identities = append(meta.Identities, fmt.Sprintf("user-%d", i))
	}
	for i := range gws {
		meta.Gateways = append(meta.Gateways, fmt.Sprintf("gw-%d", i))
	}
	h := history.New(meta, n)
	rng := rand.New(rand.NewPCG(1, 1))
	period := 100 * time.Second / time.Duration(n)
	for i := range n {
		in := time.Duration(i) * period
		sent := in + time.Duration(rng.IntN(50_000))
		r := history.Record{
			Intended: in, Sent: sent, Received: sent + time.Duration(200_000+rng.IntN(2_000_000)),
			Decided: history.NoTime, RetryAfter: history.NoTime, Identity: uint32(rng.IntN(ids)),
			Round: history.NoRound, Gateway: uint16(rng.IntN(gws)), Outcome: decision.Allowed, By: decision.ByRedis,
		}
		if rng.IntN(2) == 0 {
			r.Outcome, r.RetryAfter = decision.Denied, time.Duration(rng.IntN(1e9))
		}
		h.Append(r)
	}
	return h
}

// BenchmarkAnalyze10M reports, besides ns/op:
//
//   - history-bytes/record: the history's own columns;
//   - alloc-bytes/record: the history plus everything one Analyze
//     allocates (garbage included), a loose upper bound on the peak;
//   - peak-bytes/record: the highest heap seen during one extra, untimed
//     Analyze run with the collector set to keep garbage under 5% of the
//     live heap, sampled every millisecond - the peak live memory.
func BenchmarkAnalyze10M(b *testing.B) { benchmarkAnalyze(b, 1000) }

// BenchmarkAnalyze10MOneIdentity is the hard case: one identity holds all
// five million allowed requests, so its sorts dominate.
func BenchmarkAnalyze10MOneIdentity(b *testing.B) { benchmarkAnalyze(b, 1) }

func benchmarkAnalyze(b *testing.B, ids int) {
	const n = 10_000_000
	h := benchHistory(n, ids)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	ops := 0
	for b.Loop() {
		_ = analyzed(b, h, Options{})
		ops++
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	perOp := float64(after.TotalAlloc-before.TotalAlloc) / float64(ops)
	b.ReportMetric(float64(h.MemoryBytes())/n, "history-bytes/record")
	b.ReportMetric((float64(h.MemoryBytes())+perOp)/n, "alloc-bytes/record")
	b.ReportMetric(float64(peakHeap(func() { _ = analyzed(b, h, Options{}) }))/n, "peak-bytes/record")
}

// peakHeap runs f with a tight collector and returns the most heap object
// bytes seen while it ran.
func peakHeap(f func()) uint64 {
	old := debug.SetGCPercent(5)
	defer debug.SetGCPercent(old)
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	<-finished
	return peak
}

// BenchmarkExplainDrops is ExplainDrops over an overloaded open-model run:
// 1M requests scheduled at 1M/s, 50 workers answering in 200µs, so 99% of
// them are dropped, tallied as the traffic engine tallies them. Reported
// per request.
func BenchmarkExplainDrops(b *testing.B) {
	const n, workers = 1_000_000, 50
	h := history.New(history.Meta{Identities: []string{"u"}, Gateways: []string{"g"}, Workers: workers}, n)
	busy := make([]time.Duration, workers)
	for i := range n {
		at := time.Duration(i) * time.Microsecond
		w := i % workers
		if busy[w] > at {
			h.Meta.Drops.Add(at, 0, 0, 0)
			continue
		}
		busy[w] = at + 200*time.Microsecond
		h.Append(history.Record{Intended: at, Sent: at, Received: busy[w], Decided: history.NoTime,
			RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Allowed, By: decision.ByRedis})
	}
	b.ReportAllocs()
	for b.Loop() {
		if d := ExplainDrops(h); d.Dropped == 0 {
			b.Fatal("no drops")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/request")
}
