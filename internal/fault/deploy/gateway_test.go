package deploy_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/fault/deploy"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest/thirdgw"
)

// An independent gateway (go-redis/redis_rate on go-redis's own
// ClusterClient) keeps taking requests while the shard holding its
// identity fails over; afterwards the counter read through the layout
// on the new primary equals the admissions in the gateway's own log: a
// graceful failover loses no count, and the read sees what the library
// holds.
func TestGatewayCountsSurviveAClusterFailover(t *testing.T) {
	t.Parallel()
	cfg := userDeployment(t, redisconn.SpawnOptions{Cluster: true, ClusterReplicas: 1})
	gc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.Target().Addrs})
	t.Cleanup(func() { gc.Close() })
	// A burst no test reaches, refilled so slowly (one per 36s) that the
	// GCRA's count is the requests admitted.
	const limit, window = 100000, 1000 * time.Hour
	g := thirdgw.Start(t, thirdgw.Options{Client: gc, Library: thirdgw.RedisRate, Limit: limit, Window: window, Timeout: 5 * time.Second})
	ctx := ctxFor(t, 40*time.Second)
	key := "rate:alice"

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			req, _ := http.NewRequest(http.MethodGet, g.URL, nil)
			req.Header.Set("X-API-Key", "alice")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	o, err := deploy.Observe(ctx, cfg, deploy.ObserveOptions{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	shards, err := deploy.Failover(ctx, cfg, nil, key)
	if err != nil {
		t.Fatal(err)
	}
	e := o.Wait()
	checkElection(t, e, shards[0])
	time.Sleep(200 * time.Millisecond) // traffic on the new primary too
	close(stop)
	wg.Wait()

	admitted, failed := 0, 0
	for _, d := range g.Log() {
		if d.Allowed {
			admitted++
		}
		if d.Err != "" {
			failed++
		}
	}
	s, err := keyspace.NewRegistry(keyspace.Params{Limit: rate.Limit{Count: limit, Window: window}}).Lookup(keyspace.SchemaRedisRate)
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, cfg)
	counts, err := keyspace.ReadCounts(ctx, c, s, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	got := counts.Counts[0]
	t.Logf("%d decisions, %d admitted, %d failed; the counter holds %d; election: %d errors", len(g.Log()), admitted, failed, got.Used, len(e.Errors))
	if failed != 0 {
		t.Fatalf("%d decisions failed: a failed call may or may not have counted, so the comparison below would not hold", failed)
	}
	if admitted == 0 || got.Used != int64(admitted) {
		t.Errorf("the counter on the new primary holds %+v, the gateway admitted %d", got, admitted)
	}
}
