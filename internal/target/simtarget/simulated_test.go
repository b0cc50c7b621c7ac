package simtarget_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/target/simtarget"
	"github.com/rlctl/rlctl/internal/traffic"
)

// A local design's answers come back as the engine reads them: admitted
// with what remains, then denied with when to retry, each gateway keeping
// its own count; a killed gateway's answer is an error naming it.
func TestLocalGateways(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_764_000_000_000)
	set, err := gateway.New(context.Background(), gateway.Options{N: 2,
		Limiter: limiter.Config{Algorithm: design.LocalFixedWindow, Limit: rate.Limit{Count: 2, Window: time.Hour}},
		Now:     func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tgt := simtarget.New(set)
	defer tgt.Close()
	if g := tgt.Gateways(); len(g) != 2 || g[0] != "gw-00" {
		t.Fatalf("gateways %v, want the set's two", g)
	}
	if e := tgt.Endpoints(); len(e) != 1 || e[0] != "default" {
		t.Fatalf("endpoints %v, want [default]", e)
	}
	ctx := context.Background()
	ask := func(gw int) traffic.Response {
		return tgt.Do(ctx, traffic.Request{ID: "ann", Gateway: gw})
	}
	for i, want := range []int64{1, 0} {
		if r := ask(0); r.Outcome != decision.Allowed || r.Remaining != want || r.RetryAfter != -1 || r.By != decision.ByLocal || r.Err != nil {
			t.Fatalf("request %d: %+v, want allowed by local with %d remaining", i, r, want)
		}
	}
	r := ask(0)
	if r.Outcome != decision.Denied || r.Remaining != 0 || r.RetryAfter <= 0 || r.RetryAfter > time.Hour || r.Reset <= 0 || r.Err != nil {
		t.Fatalf("third request: %+v, want denied with a retry-after and reset within the hour", r)
	}
	if r := ask(1); r.Outcome != decision.Allowed {
		t.Fatalf("gateway 1: %+v, want allowed (a local design counts per gateway)", r)
	}
	set.Kill(1)
	r = ask(1)
	if r.Outcome != decision.Error || !errors.Is(r.Err, gateway.ErrGatewayDown) || !strings.Contains(r.Err.Error(), "gateway 1") {
		t.Fatalf("killed gateway: %+v, want an error naming gateway 1", r)
	}
	if r.RetryAfter != -1 || r.Remaining != -1 || r.Reset != -1 {
		t.Fatalf("killed gateway: %+v, want no hints", r)
	}
}

// Through Redis, the decision carries Redis TIME; Warm opens each gateway's
// connections ahead, and Close closes the set.
func TestRedisGatewaysWarmAndClose(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	set, err := gateway.New(context.Background(), gateway.Options{N: 2,
		Limiter:   limiter.Config{Algorithm: design.RedisClockWindow, Limit: rate.Limit{Count: 5, Window: time.Hour}, Clock: limiter.ClockRedis},
		NewClient: func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr}) }})
	if err != nil {
		t.Fatal(err)
	}
	tgt := simtarget.New(set)
	admin := srv.Client(t)
	before := redistest.Connections(t, admin)
	w, ok := tgt.(traffic.Warmer)
	if !ok {
		t.Fatal("the simulated target does not pass Warm on")
	}
	if err := w.Warm(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if got := redistest.Connections(t, admin) - before; got < 2*3 {
		t.Fatalf("%d connections opened by Warm(3) on two gateways, want at least 6", got)
	}
	began := time.Now()
	r := tgt.Do(context.Background(), traffic.Request{ID: "bob"})
	if r.Outcome != decision.Allowed || r.By != decision.ByRedis || r.Remaining != 4 {
		t.Fatalf("%+v, want allowed by redis with 4 remaining", r)
	}
	if r.Decided.IsZero() || r.Decided.Before(began.Add(-time.Minute)) || r.Decided.After(time.Now().Add(time.Minute)) {
		t.Fatalf("decided at %v, want Redis TIME (about now)", r.Decided)
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	if r := tgt.Do(context.Background(), traffic.Request{ID: "bob"}); r.Outcome != decision.Error {
		t.Fatalf("after Close: %+v, want an error (the set's clients are closed)", r)
	}
}

func TestFromDecision(t *testing.T) {
	at := time.UnixMilli(1_764_000_000_000)
	for _, tt := range []struct {
		name string
		in   limiter.Decision
		want traffic.Response
	}{
		{"allowed", limiter.Decision{Allowed: true, Remaining: 3, Reset: time.Second, By: decision.ByRedis, ServerTime: at},
			traffic.Response{Outcome: decision.Allowed, By: decision.ByRedis, RetryAfter: -1, Remaining: 3, Reset: time.Second, Decided: at}},
		{"denied with hints", limiter.Decision{Remaining: 0, RetryAfter: 2 * time.Second, Reset: 2 * time.Second, By: decision.ByLocal},
			traffic.Response{Outcome: decision.Denied, By: decision.ByLocal, RetryAfter: 2 * time.Second, Remaining: 0, Reset: 2 * time.Second}},
		{"denied without hints", limiter.Decision{Remaining: -1, By: decision.ByFailClosed},
			traffic.Response{Outcome: decision.Denied, By: decision.ByFailClosed, RetryAfter: -1, Remaining: -1, Reset: -1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := simtarget.FromDecision(tt.in); got != tt.want {
				t.Fatalf("FromDecision(%+v) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}
