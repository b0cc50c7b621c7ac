package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// bareLoop is the reference the decision benchmark's premise names: a bare
// go-redis loop, clients goroutines each sending the EVALSHA redis-benchmark
// sends (one of 1,000 keys, limit 100,000,000, 60 s window, cost 1) for
// the given time, recording nothing. It prints requests per second. Beside
// rlctl's figure it shows what recording costs; beside redis-benchmark's,
// what a Go client costs.
func bareLoop(url, sha string, clients int, d time.Duration) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	opts.PoolSize = clients
	opts.MinIdleConns = clients
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		return err
	}
	// redis-benchmark's keys: -r 1000 puts a 12-digit number in __rand_int__.
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("rl:fw:{%012d}", i)
	}
	var n atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(end); i += clients {
				if err := c.EvalSha(ctx, sha, keys[i%len(keys):i%len(keys)+1], 100000000, 60000, 1).Err(); err != nil {
					failed.Store(err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	fmt.Printf("%.0f\n", float64(n.Load())/time.Since(start).Seconds())
	return nil
}
