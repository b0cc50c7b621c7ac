package keyspace

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// benchKeys is the keyspace size of the benchmarks: large enough that a
// per-key cost shows, small enough to load in a second.
const benchKeys = 50000

// loadBench fills a server with n limiter keys of several layouts plus
// unrelated keys; every tenth limiter key has no TTL.
func loadBench(b *testing.B, c *redis.Client, n int) {
	b.Helper()
	loadKeys(b, c, n, func(ctx context.Context, pipe redis.Pipeliner, i int) {
		ttl := time.Minute
		if i%10 == 0 {
			ttl = 0
		}
		switch i % 4 {
		case 0:
			pipe.Set(ctx, fmt.Sprintf("rl:fw:{u%d}", i), i%100, ttl)
		case 1:
			pipe.Set(ctx, fmt.Sprintf("rl:cw:{u%d}:%d", i, 29933176), i%100, ttl)
		case 2:
			pipe.Set(ctx, fmt.Sprintf("limiter:10.%d.%d.%d", i>>16&255, i>>8&255, i&255), 3, ttl)
		default:
			pipe.Set(ctx, fmt.Sprintf("session:%d", i), "x", 0)
		}
	})
}

// loadKeys writes key i (for i < n) with set, in pipelines of 5000.
func loadKeys(b *testing.B, c *redis.Client, n int, set func(ctx context.Context, pipe redis.Pipeliner, i int)) {
	b.Helper()
	ctx := context.Background()
	pipe := c.Pipeline()
	for i := 0; i < n; i++ {
		set(ctx, pipe, i)
		if pipe.Len() >= 5000 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

// serverCPU reads the CPU seconds Redis has used (INFO cpu, user + sys).
// Per pass it is a steadier figure than wall time on a shared machine,
// and it is what other clients compete for.
func serverCPU(b *testing.B, c *redis.Client) float64 {
	b.Helper()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, name := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(redisconn.InfoField(info, name), 64)
		if err != nil {
			b.Fatalf("INFO cpu %s: %v", name, err)
		}
		sum += v
	}
	return sum
}

// reportServerCPU reports Redis's CPU milliseconds per pass since cpu0.
func reportServerCPU(b *testing.B, c *redis.Client, cpu0 float64) {
	b.ReportMetric((serverCPU(b, c)-cpu0)*1000/float64(b.N), "server-ms/op")
}

// BenchmarkScanBare is the baseline: listing every key with SCAN COUNT 1000
// and doing nothing else.
func BenchmarkScanBare(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client(b)
	loadBench(b, c, benchKeys)
	ctx := context.Background()
	b.ResetTimer()
	cpu0 := serverCPU(b, c)
	for i := 0; i < b.N; i++ {
		n := 0
		err := ScanNode(ctx, Node{Addr: srv.Addr, Client: c}, "*", func(keys []string) error { n += len(keys); return nil })
		if err != nil || n != benchKeys {
			b.Fatalf("%d keys, %v", n, err)
		}
	}
	reportServerCPU(b, c, cpu0)
	b.ReportMetric(float64(benchKeys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkAudit measures a whole audit pass. Memory must not grow with
// the keyspace: B/op divided by the key count stays small and heap-in-use
// after the pass is reported.
func BenchmarkAudit(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client(b)
	loadBench(b, c, benchKeys)
	ctx := context.Background()
	opts := AuditOptions{
		Schemas:         NewRegistry(Params{Limit: rate.Limit{Count: 100, Window: time.Minute}}).All(),
		RefreshInterval: time.Millisecond, LatencyProbes: 10,
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := serverCPU(b, c)
	for i := 0; i < b.N; i++ {
		rep, err := Audit(ctx, c, opts)
		if err != nil || rep.Scanned != benchKeys {
			b.Fatalf("%v %+v", err, rep)
		}
	}
	b.StopTimer()
	reportServerCPU(b, c, cpu0)
	b.ReportMetric(float64(benchKeys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heapMB")
}

// BenchmarkRepairTTL measures repair-ttl over the same keyspace, with a
// tenth of the limiter keys lacking their TTL (re-broken before each pass).
func BenchmarkRepairTTL(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client(b)
	loadBench(b, c, benchKeys)
	ctx := context.Background()
	schemas := NewRegistry(Params{Limit: rate.Limit{Count: 100, Window: time.Minute}}).All()
	var broken []string
	for i := 0; i < benchKeys; i += 10 {
		switch i % 4 {
		case 0:
			broken = append(broken, fmt.Sprintf("rl:fw:{u%d}", i))
		case 2:
			broken = append(broken, fmt.Sprintf("limiter:10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu float64 // Redis CPU seconds of the passes only, not of re-breaking
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pipe := c.Pipeline()
		for _, k := range broken {
			pipe.Persist(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		cpu0 := serverCPU(b, c)
		b.StartTimer()
		st, err := RepairTTL(ctx, c, RepairOptions{Schemas: schemas})
		if err != nil || st.Repaired != int64(len(broken)) {
			b.Fatalf("%v %+v (want %d)", err, st, len(broken))
		}
		b.StopTimer()
		cpu += serverCPU(b, c) - cpu0
		b.StartTimer()
	}
	b.ReportMetric(cpu*1000/float64(b.N), "server-ms/op")
	b.ReportMetric(float64(benchKeys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkRepairTTLMostlyOtherKeys measures repair-ttl where nine keys in
// ten belong to no limiter: after its first pages repair-ttl scans plainly
// and checks only the limiter keys, instead of checking every key while
// scanning (the way BenchmarkRepairTTL's keyspace is read).
func BenchmarkRepairTTLMostlyOtherKeys(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client(b)
	loadKeys(b, c, benchKeys, func(ctx context.Context, pipe redis.Pipeliner, i int) {
		if i%10 == 0 {
			pipe.Set(ctx, fmt.Sprintf("rl:fw:{u%d}", i), 1, time.Minute)
		} else {
			pipe.Set(ctx, fmt.Sprintf("session:%d", i), "x", 0)
		}
	})
	ctx := context.Background()
	schemas := NewRegistry(Params{Limit: rate.Limit{Count: 100, Window: time.Minute}}).All()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := serverCPU(b, c)
	for i := 0; i < b.N; i++ {
		st, err := RepairTTL(ctx, c, RepairOptions{Schemas: schemas})
		if err != nil || st.Matched != benchKeys/10 || st.MissingTTL != 0 {
			b.Fatalf("%v %+v", err, st)
		}
	}
	reportServerCPU(b, c, cpu0)
	b.ReportMetric(float64(benchKeys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}
