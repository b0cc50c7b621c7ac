package redisconn_test

import (
	"context"
	"testing"

	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// BenchmarkIncr compares one INCR round trip on the embedded server with a
// real redis-server, both on loopback: what a simulated gateway pays per
// decision before any Lua.
func BenchmarkIncr(b *testing.B) {
	ctx := context.Background()
	e, err := redisconn.StartEmbedded(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for _, tt := range []struct{ name, url string }{
		{"embedded", e.URL()},
		{"redis-server", redistest.Start(b).URL()},
	} {
		b.Run(tt.name, func(b *testing.B) {
			cfg, err := redisconn.Parse(redisconn.Options{URL: tt.url})
			if err != nil {
				b.Fatal(err)
			}
			c, err := cfg.Connect(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for b.Loop() {
				if err := c.Incr(ctx, "bench").Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
