package hotpath_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/hotpath"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// incr adds ARGV[1] to KEYS[1] and answers {new value, ARGV[2], -7}.
var incr = hotpath.NewScript(`local v = redis.call('INCRBY', KEYS[1], ARGV[1]) return {v, tonumber(ARGV[2]), -7}`)

func pool(t *testing.T, c *redis.Client) *hotpath.Pool {
	t.Helper()
	p, ok := hotpath.FromClient(c)
	if !ok {
		t.Fatal("FromClient refused a plain client")
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func call(t *testing.T, p *hotpath.Pool, key string, by, echo int64) []int64 {
	t.Helper()
	var a hotpath.Args
	a.Key(key)
	a.Int(by)
	a.Int(echo)
	r, err := p.EvalInts(context.Background(), incr, &a, nil)
	if err != nil {
		t.Fatalf("EvalInts: %v", err)
	}
	return r
}

func TestEvalIntsLoadsScriptAndReadsReply(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	p := pool(t, c)
	ctx := context.Background()
	// A fresh server does not know the script: the NOSCRIPT answer makes
	// the pool send EVAL, which also loads it.
	if got := call(t, p, "k", 5, 12345678901); !slices.Equal(got, []int64{5, 12345678901, -7}) {
		t.Fatalf("first call = %v", got)
	}
	if got := call(t, p, "k", 2, 0); !slices.Equal(got, []int64{7, 0, -7}) {
		t.Fatalf("second call = %v", got)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := call(t, p, "k", 1, 1); !slices.Equal(got, []int64{8, 1, -7}) {
		t.Fatalf("after SCRIPT FLUSH = %v", got)
	}
	if v, _ := c.Get(ctx, "k").Int64(); v != 8 {
		t.Fatalf("k = %d on the server, want 8", v)
	}
}

func TestEvalIntsErrorsKeepConnectionInStep(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	p := pool(t, c)
	ctx := context.Background()
	var a hotpath.Args
	a.Key("k")
	a.String("not a number")
	a.Int(0)
	_, err := p.EvalInts(ctx, incr, &a, nil)
	var re hotpath.Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("script error = %v, want a server error reply", err)
	}
	// A reply of the wrong shape (strings, nested arrays, nil) is a
	// protocol error, and the next call still reads its own reply.
	odd := hotpath.NewScript(`return {1, 'two', {3, {4}}, false, 5}`)
	var b hotpath.Args
	b.Key("k")
	if _, err := p.EvalInts(ctx, odd, &b, nil); !errors.Is(err, hotpath.ErrProtocol) {
		t.Fatalf("odd reply = %v, want ErrProtocol", err)
	}
	notArray := hotpath.NewScript(`return 'x'`)
	if _, err := p.EvalInts(ctx, notArray, &b, nil); !errors.Is(err, hotpath.ErrProtocol) {
		t.Fatalf("bulk reply = %v, want ErrProtocol", err)
	}
	if got := call(t, p, "k", 3, 4); !slices.Equal(got, []int64{3, 4, -7}) {
		t.Fatalf("call after errors = %v", got)
	}
	if n := clients(t, c); n != 2 {
		t.Fatalf("%d clients connected, want 2 (the test's and the pool's one reused connection)", n)
	}
}

func TestPoolBoundsConnections(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	p, _ := hotpath.FromClient(redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 3}))
	defer p.Close()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				var a hotpath.Args
				a.Key("n")
				a.Int(1)
				a.Int(0)
				if _, err := p.EvalInts(context.Background(), incr, &a, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v, _ := c.Get(context.Background(), "n").Int64(); v != 1000 {
		t.Fatalf("n = %d, want 1000", v)
	}
	if n := clients(t, c); n < 2 || n > 4 {
		t.Fatalf("%d clients connected, want the test's plus 1 to 3 of the pool's", n)
	}
	p.Close()
	deadline := time.Now().Add(5 * time.Second)
	for clients(t, c) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("pool connections still open after Close: %d clients", clients(t, c))
		}
		time.Sleep(10 * time.Millisecond)
	}
	var a hotpath.Args
	a.Key("n")
	if _, err := p.EvalInts(context.Background(), incr, &a, nil); !errors.Is(err, hotpath.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

func TestPoolAuthenticatesWithACLUser(t *testing.T) {
	srv := redistest.StartACL(t)
	p := pool(t, srv.Client(t))
	if got := call(t, p, "acl", 1, 2); !slices.Equal(got, []int64{1, 2, -7}) {
		t.Fatalf("call = %v", got)
	}
	wrong, _ := hotpath.FromClient(redis.NewClient(&redis.Options{Addr: srv.Addr, Username: srv.Username, Password: "wrong-secret"}))
	defer wrong.Close()
	var a hotpath.Args
	a.Key("acl")
	_, err := wrong.EvalInts(context.Background(), incr, &a, nil)
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("wrong password: %v (want an AUTH error without the password)", err)
	}
}

func TestPoolSelectsDatabase(t *testing.T) {
	srv := redistest.Start(t)
	p, _ := hotpath.FromClient(redis.NewClient(&redis.Options{Addr: srv.Addr, DB: 3, ClientName: "rlctl-hotpath-test"}))
	defer p.Close()
	call(t, p, "indb3", 1, 0)
	c3 := redis.NewClient(&redis.Options{Addr: srv.Addr, DB: 3})
	defer c3.Close()
	if v, _ := c3.Get(context.Background(), "indb3").Int64(); v != 1 {
		t.Fatalf("indb3 in db 3 = %d, want 1", v)
	}
	if n, _ := srv.Client(t).Exists(context.Background(), "indb3").Result(); n != 0 {
		t.Fatal("the key landed in db 0")
	}
	list, _ := srv.Client(t).ClientList(context.Background()).Result()
	if !strings.Contains(list, "name=rlctl-hotpath-test") {
		t.Fatalf("client name not set: %s", list)
	}
}

func TestPoolOverTLS(t *testing.T) {
	srv := redistest.StartMutualTLS(t)
	p := pool(t, srv.Client(t))
	if got := call(t, p, "tls", 4, 4); !slices.Equal(got, []int64{4, 4, -7}) {
		t.Fatalf("call = %v", got)
	}
}

// A Sentinel client is not mirrored: its own pool drops the old primary's
// connections when Sentinel announces a new one, and a mirror would not.
func TestSentinelClientNotMirrored(t *testing.T) {
	primary := redistest.Start(t)
	s := redistest.StartSentinel(t, primary)
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: []string{s.Addr}})
	defer fc.Close()
	if p, ok := hotpath.FromClient(fc); ok || p != nil {
		t.Fatal("FromClient mirrored a Sentinel client")
	}
	if hotpath.ForClient(fc) != nil {
		t.Fatal("ForClient mirrored a Sentinel client")
	}
}

func TestEmbeddedRedis(t *testing.T) {
	e, err := redisconn.StartEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := redis.NewClient(&redis.Options{Addr: e.Addr()})
	defer c.Close()
	p := pool(t, c)
	if got := call(t, p, "m", 9, 1); !slices.Equal(got, []int64{9, 1, -7}) {
		t.Fatalf("call = %v", got)
	}
}

// A server that accepts and never answers: the call ends at the context's
// deadline, and a call without one at the pool's timeout.
func TestSilentServerTimesOut(t *testing.T) {
	addr, _ := redistest.Silent(t)
	p := hotpath.New(hotpath.Options{Timeout: 200 * time.Millisecond, Dial: func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}})
	defer p.Close()
	var a hotpath.Args
	a.Key("k")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := p.EvalInts(ctx, incr, &a, nil); err == nil {
		t.Fatal("a silent server answered")
	}
	if _, err := p.EvalInts(context.Background(), incr, &a, nil); err == nil {
		t.Fatal("a silent server answered")
	}
	// Generous: this asserts "ends by itself", not a speed.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("calls took %v", d)
	}
}

// A call waiting for a free connection gives up at its deadline, not only
// at the pool timeout: a policy's timeout bounds the whole decision.
func TestPoolWaitEndsAtDeadline(t *testing.T) {
	addr, _ := redistest.Silent(t)
	p := hotpath.New(hotpath.Options{Size: 1, PoolTimeout: time.Minute, Dial: func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}})
	defer p.Close()
	var a hotpath.Args
	a.Key("k")
	held := make(chan struct{})
	go func() {
		// Takes the only connection and waits on the silent server.
		close(held)
		p.EvalIntsUntil(context.Background(), time.Now().Add(5*time.Second), incr, &a, nil)
	}()
	<-held
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	_, err := p.EvalIntsUntil(context.Background(), time.Now().Add(100*time.Millisecond), incr, &a, nil)
	if !errors.Is(err, hotpath.ErrPoolTimeout) {
		t.Fatalf("waiting call: %v, want ErrPoolTimeout", err)
	}
	// Far below the one-minute pool timeout; generous for a loaded machine.
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("waiting call returned after %v", d)
	}
}

func clients(t *testing.T, c *redis.Client) int { return redistest.Connections(t, c) }

// A connection the server closed while idle (redis.conf timeout) is not
// reused: the next call dials anew instead of failing.
func TestIdleConnectionClosedByServerIsReplaced(t *testing.T) {
	t.Parallel()
	for _, mk := range []struct {
		name string
		srv  func(*testing.T) *redistest.Server
	}{
		{"plain", func(t *testing.T) *redistest.Server { return redistest.Start(t) }},
		{"tls", func(t *testing.T) *redistest.Server { return redistest.StartTLS(t).Server }},
	} {
		t.Run(mk.name, func(t *testing.T) {
			t.Parallel()
			srv := mk.srv(t)
			c := srv.Client(t)
			p := pool(t, c)
			call(t, p, "idle", 1, 0)
			if err := c.ConfigSet(context.Background(), "timeout", "1").Err(); err != nil {
				t.Fatal(err)
			}
			// Redis closes clients idle past the timeout on its next
			// check of them; wait until the pool's connection is gone.
			deadline := time.Now().Add(15 * time.Second)
			for clients(t, c) > 1 {
				if time.Now().After(deadline) {
					t.Fatal("the server never closed the idle connection")
				}
				time.Sleep(100 * time.Millisecond)
			}
			if got := call(t, p, "idle", 1, 0); got[0] != 2 {
				t.Fatalf("call after the idle close = %v", got)
			}
		})
	}
}

// A dial is bounded by the call's deadline too: a Redis that drops
// packets must not hold a decision past its policy's timeout.
func TestDialEndsAtDeadline(t *testing.T) {
	t.Parallel()
	p := hotpath.New(hotpath.Options{Dial: func(ctx context.Context) (net.Conn, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return nil, errors.New("the dial outlived its deadline")
		}
	}})
	defer p.Close()
	var a hotpath.Args
	a.Key("k")
	_, err := p.EvalIntsUntil(context.Background(), time.Now().Add(100*time.Millisecond), incr, &a, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial error %v, want the deadline", err)
	}
}

// Warm opens connections up to the pool's size, and calls that come at
// once afterwards find them open: Redis accepts no new connection.
func TestPoolWarmOpensConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(t)
	p, _ := hotpath.FromClient(redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 4}))
	defer p.Close()
	if err := p.Warm(ctx, 3); err != nil {
		t.Fatalf("Warm(3): %v", err)
	}
	if n := clients(t, c); n != 1+3 {
		t.Fatalf("%d clients after Warm(3), want the test's and 3", n)
	}
	if err := p.Warm(ctx, 10); err != nil {
		t.Fatalf("Warm(10): %v", err)
	}
	if n := clients(t, c); n != 1+4 {
		t.Fatalf("%d clients after Warm(10) on a pool of 4, want the test's and 4", n)
	}
	before := redistest.Accepted(t, c)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				var a hotpath.Args
				a.Key("n")
				a.Int(1)
				a.Int(0)
				if _, err := p.EvalInts(ctx, incr, &a, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if after := redistest.Accepted(t, c); after != before {
		t.Fatalf("connections accepted went from %s to %s while 4 callers used a warm pool of 4", before, after)
	}
}

// Eval reads any reply a user's script may give, as go-redis does over
// RESP2, including bulk strings longer than the read buffer and error
// replies nested in a table.
func TestEvalReadsAnyReply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	p := pool(t, srv.Client(t))
	long := strings.Repeat("x", 100_000)
	tests := []struct {
		src  string
		want any
	}{
		{`return 7`, int64(7)},
		{`return -3`, int64(-3)},
		{`return 'text'`, "text"},
		{`return ARGV[1]`, long},
		{`return nil`, nil},
		{`return false`, nil},
		{`return true`, int64(1)},
		{`return redis.status_reply('FINE')`, "FINE"},
		{`return {}`, []any{}},
		// Redis turns false inside a table into a nil element.
		{`return {KEYS[1], 2, {3, 'four'}, false}`, []any{"k", int64(2), []any{int64(3), "four"}, nil}},
		// error_reply prefixes ERR (Redis 7 and later), which rueidis drops.
		{`return {1, redis.error_reply('inner')}`, []any{int64(1), hotpath.Error("inner")}},
	}
	for _, tt := range tests {
		got, err := p.Eval(ctx, time.Time{}, hotpath.NewScript(tt.src), []string{"k"}, []string{long})
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			if s, ok := got.(string); ok && len(s) > 40 {
				got = fmt.Sprintf("%d-byte string", len(s))
			}
			t.Errorf("%s = %#v", tt.src, got)
		}
	}
	// An error reply at the top is the error, and the connection stays in
	// step for the next call.
	var re hotpath.Error
	if _, err := p.Eval(ctx, time.Time{}, hotpath.NewScript(`return redis.error_reply('no way')`), nil, nil); !errors.As(err, &re) || !strings.HasSuffix(err.Error(), "no way") {
		t.Fatalf("error reply: %v", err)
	}
	if got, err := p.Eval(ctx, time.Time{}, hotpath.NewScript(`return 1`), nil, nil); err != nil || got != int64(1) {
		t.Fatalf("after an error reply: %v, %v", got, err)
	}
}
