package hotpath_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/hotpath"
	"github.com/rlctl/rlctl/internal/redistest"
)

// BenchmarkEvalInts is one decision-shaped call (EVALSHA with a key and
// two integers, an array of three integers back) on a warm pool against a
// real redis-server on loopback: the path every Lua design decides on.
func BenchmarkEvalInts(b *testing.B) {
	p := warmPool(b, 1)
	dst := make([]int64, 0, 3)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = benchCall(p, dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalIntsParallel is BenchmarkEvalInts from 50 goroutines over a
// pool of 50 connections, as 50 simulated gateways share it.
func BenchmarkEvalIntsParallel(b *testing.B) {
	p := warmPool(b, 50)
	b.SetParallelism(25) // 50 goroutines on 2 CPUs
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]int64, 0, 3)
		for pb.Next() {
			var err error
			if dst, err = benchCall(p, dst); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// warmPool is a pool of size connections to a new server, all open.
func warmPool(b *testing.B, size int) *hotpath.Pool {
	srv := redistest.Start(b)
	p, _ := hotpath.FromClient(redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: size}))
	b.Cleanup(func() { p.Close() })
	if err := p.Warm(context.Background(), size); err != nil {
		b.Fatal(err)
	}
	return p
}

func benchCall(p *hotpath.Pool, dst []int64) ([]int64, error) {
	var a hotpath.Args
	a.Key("bench")
	a.Int(1)
	a.Int(0)
	return p.EvalInts(context.Background(), incr, &a, dst)
}
