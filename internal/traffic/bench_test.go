package traffic

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
	"github.com/rlctl/rlctl/internal/workload"
)

// BenchmarkEngineOpen measures the open model's own cost per request with
// an instant in-process target: pacing, dispatch, the worker, the consumer
// and the history append. Run with -benchmem: the hot path allocates
// nothing, so allocs/op rounds to 0 once b.N dwarfs the fixed setup.
func BenchmarkEngineOpen(b *testing.B) {
	tgt := newInstant(50)
	plan := Plan{
		Rate:     rate.Limit{Count: 1_000_000_000, Window: time.Second}, // as fast as the engine goes
		Duration: time.Hour, MaxRequests: int64(b.N), Workers: 64, Identities: 16,
	}
	b.ReportAllocs()
	b.ResetTimer()
	h, err := Run(context.Background(), tgt, plan, RunOptions{})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	c := traffictest.Counts(h)
	b.ReportMetric(float64(c[decision.Dropped])/float64(traffictest.Requests(h)), "dropped/op")
}

// BenchmarkEngineClosed is the closed model's cost per request.
func BenchmarkEngineClosed(b *testing.B) {
	plan := Plan{Model: workload.ModelClosed, Concurrency: 8, Duration: time.Hour, MaxRequests: int64(b.N), Identities: 16}
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := Run(context.Background(), newInstant(50), plan, RunOptions{}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPacerLag measures how late the open model sends: Intended to
// Sent with an instant target, as lag-p50-µs and lag-p99-µs, at 4,000/s
// (a wake per request) and 20,000/s (above minWake's 5,000 wakes a second,
// each wake sends what is due). Latency is measured from Intended, so this
// lag is the floor of every latency rlctl reports. (With the runtime's
// timer alone it was about 500 and 1,100 µs at any rate: its millisecond
// granularity.) Each iteration is one second of traffic.
func BenchmarkPacerLag(b *testing.B) {
	for _, perSec := range []int64{4000, 20000} {
		b.Run(fmt.Sprintf("%d-per-s", perSec), func(b *testing.B) {
			var lags []time.Duration
			for b.Loop() {
				plan := Plan{Rate: perSecond(perSec), Duration: time.Second, MaxRequests: perSec, Identities: 16}
				h, err := Run(context.Background(), newInstant(4), plan, RunOptions{})
				if err != nil {
					b.Fatal(err)
				}
				for i := range h.Len() {
					if r := h.At(i); r.Outcome != decision.Dropped {
						lags = append(lags, r.Sent-r.Intended)
					}
				}
			}
			slices.Sort(lags)
			b.ReportMetric(float64(lags[len(lags)/2].Microseconds()), "lag-p50-µs")
			b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds()), "lag-p99-µs")
		})
	}
}

// BenchmarkEngineOverload is the open model far above what the target
// serves: a 200µs target behind 50 workers (250,000/s at most) scheduled at
// 2,000,000/s, so most requests are dropped. It reports the process's CPU
// per request answered (the cost of each drop lands on the answered ones)
// beside the closed model's, which BenchmarkEngineClosedSlow gives.
func BenchmarkEngineOverload(b *testing.B) {
	lim := newWindowLimiter(1<<40, time.Hour, 50)
	lim.delay = 200 * time.Microsecond
	plan := Plan{
		Rate:     rate.Limit{Count: 2_000_000, Window: time.Second},
		Duration: time.Hour, MaxRequests: int64(b.N), Workers: 50, Identities: 16,
	}
	b.ResetTimer()
	before, _ := processCPU()
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	after, _ := processCPU()
	cpu := after - before
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	c := traffictest.Counts(h)
	answered := c[decision.Allowed] + c[decision.Denied]
	b.ReportMetric(float64(c[decision.Dropped])/float64(traffictest.Requests(h)), "dropped/op")
	b.ReportMetric(float64(cpu.Microseconds())/float64(max(answered, 1)), "cpu-µs/decision")
}

// BenchmarkEngineClosedSlow is the closed model against the same 200µs
// target: its CPU per decision is the parity the overload is held to.
func BenchmarkEngineClosedSlow(b *testing.B) {
	lim := newWindowLimiter(1<<40, time.Hour, 50)
	lim.delay = 200 * time.Microsecond
	plan := Plan{Model: workload.ModelClosed, Concurrency: 50, Duration: time.Hour, MaxRequests: int64(b.N), Identities: 16}
	b.ResetTimer()
	before, _ := processCPU()
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	after, _ := processCPU()
	cpu := after - before
	if err != nil {
		b.Fatal(err)
	}
	c := traffictest.Counts(h)
	b.ReportMetric(float64(cpu.Microseconds())/float64(max(c[decision.Allowed]+c[decision.Denied], 1)), "cpu-µs/decision")
}
