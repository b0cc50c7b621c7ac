package clientbench

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rlctl/rlctl/internal/hotpath"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/redistest"
)

// The call every benchmark below makes: redis-fixed-window's script by
// EVALSHA on one of 1,000 keys with the arguments make bench gives
// redis-benchmark (limit 100,000,000, a 60 s window, cost 1), an array
// of integers back.
const (
	benchKeys   = 1000
	benchLimit  = 100000000
	benchWindow = 60000
)

func benchSetup(b *testing.B) (srv *redistest.Server, src string, keys []string) {
	src, ok := limiter.Scripts()["redis-fixed-window"]
	if !ok {
		b.Fatal("no redis-fixed-window script")
	}
	srv = redistest.Start(b)
	keys = make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("rl:fw:{%012d}", i)
	}
	return srv, src, keys
}

// BenchmarkDecisionClient is one decision's EVALSHA through each client
// from 50 goroutines: rlctl's decision path (internal/hotpath, rueidis
// without auto-pipelining plus what rlctl adds: a probe of each idle
// connection, deadlines, a bound on calls under way), bare rueidis with
// and without auto-pipelining (what that glue costs, and what
// auto-pipelining would), and go-redis. In two shapes: "shared", one client with 50
// connections for all (rueidis with auto-pipelining multiplexes them on
// one connection, its default), and "gateways", what rlctl's simulated
// target runs: 50 gateways, each with its own client, one goroutine each
// sending at a time, so a gateway's requests seldom overlap.
func BenchmarkDecisionClient(b *testing.B) {
	for _, shape := range []struct {
		name    string
		clients int // clients made; goroutine w uses client w % clients
		conns   int // connections per client
	}{{"shared", 1, clients}, {"gateways", clients, 1}} {
		b.Run(shape.name, func(b *testing.B) { benchClients(b, shape.clients, shape.conns) })
	}
}

func benchClients(b *testing.B, n, conns int) {
	b.Run("hotpath", func(b *testing.B) {
		srv, src, keys := benchSetup(b)
		pools := make([]*hotpath.Pool, n)
		for k := range pools {
			pools[k] = hotpath.New(hotpath.Options{Dial: dialer(srv.Addr), Size: conns})
			defer pools[k].Close()
			if err := pools[k].Warm(context.Background(), conns); err != nil {
				b.Fatal(err)
			}
		}
		s := hotpath.NewScript(src)
		dsts := make([][]int64, 1024) // one per goroutine (RunParallel starts 50 here)
		measure(b, func(w, i int) error {
			var a hotpath.Args
			a.Key(keys[(w+i*clients)%benchKeys])
			a.Int(benchLimit)
			a.Int(benchWindow)
			a.Int(1)
			var err error
			dsts[w], err = pools[w%n].EvalInts(context.Background(), s, &a, dsts[w][:0])
			return err
		})
	})
	for _, pipelined := range []bool{true, false} {
		name := "rueidis-autopipelining"
		if !pipelined {
			name = "rueidis-no-autopipelining"
		}
		b.Run(name, func(b *testing.B) {
			srv, src, keys := benchSetup(b)
			cs := make([]rueidis.Client, n)
			var sha string
			for k := range cs {
				c, err := rueidis.NewClient(rueidis.ClientOption{
					InitAddress: []string{srv.Addr}, DisableCache: true,
					DisableAutoPipelining: !pipelined, BlockingPoolSize: conns,
				})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				if sha, err = c.Do(context.Background(), c.B().ScriptLoad().Script(src).Build()).ToString(); err != nil {
					b.Fatal(err)
				}
				cs[k] = c
			}
			measure(b, func(w, i int) error {
				c := cs[w%n]
				cmd := c.B().Evalsha().Sha1(sha).Numkeys(1).Key(keys[(w+i*clients)%benchKeys]).
					Arg("100000000", "60000", "1").Build()
				_, err := c.Do(context.Background(), cmd).AsIntSlice()
				return err
			})
		})
	}
	b.Run("go-redis", func(b *testing.B) {
		srv, src, keys := benchSetup(b)
		cs := make([]*redis.Client, n)
		var sha string
		for k := range cs {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: conns, MinIdleConns: conns})
			defer c.Close()
			var err error
			if sha, err = c.ScriptLoad(context.Background(), src).Result(); err != nil {
				b.Fatal(err)
			}
			cs[k] = c
		}
		measure(b, func(w, i int) error {
			k := (w + i*clients) % benchKeys
			return cs[w%n].EvalSha(context.Background(), sha, keys[k:k+1], benchLimit, benchWindow, 1).Err()
		})
	})
}
