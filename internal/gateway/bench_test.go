package gateway_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/workload"
)

// BenchmarkDecide is one decision through a set of 4 gateways with an
// on_error: open policy, against a real redis-server: the whole path a
// simulated request takes.
func BenchmarkDecide(b *testing.B) {
	srv := redistest.Start(b)
	ids := make([]string, 256)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	for _, tt := range []struct {
		algo     string
		honoured bool
	}{
		{design.RedisFixedWindow, false},
		{design.RedisFixedWindow, true},
		{design.Leasing, false},
		{design.LocalFixedWindow, false},
	} {
		b.Run(tt.algo+"/context-"+strconv.FormatBool(tt.honoured), func(b *testing.B) {
			s, err := gateway.New(context.Background(), gateway.Options{
				N:         4,
				Limiter:   limiter.Config{Algorithm: tt.algo, Limit: rate.Limit{Count: 1_000_000_000, Window: time.Second}},
				Endpoints: []gateway.Endpoint{{Name: "api", Share: 1, Policy: limiter.Policy{OnError: limiter.OnErrorOpen}}},
				NewClient: clientsOf(srv.Addr, tt.honoured),
			})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			bal, _ := workload.NewBalancer(workload.SpreadRoundRobin, 4, 0)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := uint32(i & 255)
				if _, err := s.Decide(ctx, bal.Pick(id, uint64(i>>8)), 0, ids[id]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
