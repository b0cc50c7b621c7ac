package limiter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
)

func ExampleKeys() {
	cfg := limiter.Config{Algorithm: design.RedisSlidingWindow, Limit: rate.Limit{Count: 100, Window: time.Minute}}
	now := time.UnixMilli(6_000_000) // window index 100 of one-minute windows
	fmt.Println(limiter.KeyPattern(cfg))
	fmt.Println(limiter.Keys(cfg, "user-7", now))
	// Output:
	// rl:sw:{*}:*
	// [rl:sw:{user-7}:100 rl:sw:{user-7}:99]
}

func ExampleNew_local() {
	// Two gateways, each with its own memory: together they admit twice the
	// limit.
	cfg := limiter.Config{Algorithm: design.LocalFixedWindow, Limit: rate.Limit{Count: 3, Window: time.Minute}}
	admitted := 0
	for gw := 0; gw < 2; gw++ {
		l, err := limiter.New(cfg, nil, nil)
		if err != nil {
			panic(err)
		}
		for i := 0; i < 5; i++ {
			if d, _ := l.Allow(context.Background(), "user-7", 1); d.Allowed {
				admitted++
			}
		}
	}
	fmt.Println(admitted)
	// Output: 6
}
