package simtarget_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target"
	"github.com/rlctl/rlctl/internal/target/simtarget"
)

// OpenGateways builds the gateways a target describes on the Redis it
// names (here the embedded one, which stops with its context): they share
// one limit there, keep deciding after the context they were opened with
// ends (a served gateway drains after its signal), and stop closes them.
func TestOpenGatewaysSharesOneLimitAndOutlivesCtx(t *testing.T) {
	t.Parallel()
	sc := &scenario.Scenario{Limit: rate.Limit{Count: 3, Window: time.Hour}, Target: scenario.Target{
		Kind: scenario.KindSimulated, Algorithm: design.RedisFixedWindow, Gateways: 3, Timeout: time.Second,
		Endpoints: []scenario.Endpoint{
			{Name: "login", Share: 0.5, OnError: limiter.OnErrorClosed, OnFailover: limiter.OnFailoverTrust},
			{Name: "feed", Share: 0.5, OnError: limiter.OnErrorClosed, OnFailover: limiter.OnFailoverTrust},
		},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	spec := target.SpecOf(sc, redisconn.SpecEmbedded)
	spec.RedisOptions = redisconn.Options{Timeout: time.Second}
	set, stop, err := simtarget.OpenGateways(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if n, e := set.Names(), set.Endpoints(); len(n) != 3 || len(e) != 2 || e[0] != "login" {
		t.Fatalf("gateways %v, endpoints %v; want 3 gateways and login, feed", n, e)
	}
	admitted := 0
	for i := range 6 {
		d, err := set.Decide(context.Background(), i%3, i%2, "ann")
		if err != nil || d.By != decision.ByRedis {
			t.Fatalf("decision %d after ctx ended: %+v, %v; want Redis to decide", i, d, err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 3 {
		t.Fatalf("%d of 6 admitted through 3 gateways and 2 endpoints, want the shared limit of 3", admitted)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Their clients closed, the gateways reach Redis no more: the failure
	// policy (closed) decides.
	if d, err := set.Decide(context.Background(), 0, 0, "ann"); err == nil && d.By == decision.ByRedis {
		t.Fatalf("after stop Redis still decided: %+v", d)
	}
}

// A local design needs no Redis: nothing is opened, even when the Redis
// named cannot be reached.
func TestOpenGatewaysLocalDesignOpensNoRedis(t *testing.T) {
	t.Parallel()
	sc := &scenario.Scenario{Limit: rate.Limit{Count: 1, Window: time.Hour}, Target: scenario.Target{
		Kind: scenario.KindSimulated, Algorithm: design.LocalFixedWindow, Gateways: 1,
		Endpoints: []scenario.Endpoint{{Name: "default", Share: 1, OnError: limiter.OnErrorClosed}},
	}}
	set, stop, err := simtarget.OpenGateways(context.Background(), target.SpecOf(sc, "redis://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for i, want := range []bool{true, false} {
		if d, err := set.Decide(context.Background(), 0, 0, "ann"); err != nil || d.Allowed != want {
			t.Fatalf("decision %d: %+v, %v; want allowed %v", i, d, err, want)
		}
	}
}
