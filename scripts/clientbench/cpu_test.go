package clientbench

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the user+system time this process has used so far: a
// redis-server or nginx under test is another process and not in it.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clients is how many goroutines send at once, as make bench's 50
// simulated gateways or 50 HTTP connections.
const clients = 50

// measure runs op from clients goroutines b.N times in all and reports
// requests per second and CPU µs per request.
func measure(b *testing.B, op func(worker, i int) error) {
	b.Helper()
	b.SetParallelism((clients + 1) / 2) // GOMAXPROCS is 2 on make bench's machine
	var next atomicCounter
	b.ResetTimer()
	cpu := processCPU(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		w := int(next.add())
		for i := 0; pb.Next(); i++ {
			if err := op(w, i); err != nil {
				b.Error(err)
				return
			}
		}
	})
	took := time.Since(start)
	cpu = processCPU(b) - cpu
	b.StopTimer()
	b.ReportMetric(float64(b.N)/took.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/req")
}
