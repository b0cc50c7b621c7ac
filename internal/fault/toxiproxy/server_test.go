package toxiproxy_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/fault/toxiproxy"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/redistest/toxitest"
)

// toxiAPI is the test binary's real Toxiproxy (see toxitest).
func toxiAPI(t *testing.T) string { return toxitest.API(t) }

// setup is a real redis-server behind a Toxiproxy proxy of the test's own.
type setup struct {
	api, proxy string
	// listen is the proxy's address: where the gateways would connect.
	listen string
	redis  *redistest.Server
}

var proxySeq struct {
	sync.Mutex
	n int
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	api := toxiAPI(t)
	r := redistest.Start(t)
	proxySeq.Lock()
	proxySeq.n++
	name := fmt.Sprintf("redis-%d", proxySeq.n)
	proxySeq.Unlock()
	return &setup{api: api, proxy: name, listen: toxitest.NewProxy(t, api, name, r.Addr), redis: r}
}

// apiCall talks to the Toxiproxy API directly, as another user of it
// would (see toxitest.Call).
func apiCall(t *testing.T, api, method, path string, in, out any) {
	t.Helper()
	toxitest.Call(t, api, method, path, in, out)
}

// proxyState reads the proxy as the API shows it now.
func (s *setup) proxyState(t *testing.T) toxiproxy.Proxy {
	t.Helper()
	var p toxiproxy.Proxy
	apiCall(t, s.api, http.MethodGet, "/proxies/"+s.proxy, nil, &p)
	return p
}

func toxicNames(p toxiproxy.Proxy) []string {
	var out []string
	for _, tx := range p.Toxics {
		out = append(out, tx.Name)
	}
	return out
}

// viaProxy is a client that reaches Redis through the proxy the way a
// gateway's would, with no retries so each failure shows.
func (s *setup) viaProxy(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.listen, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, DisableIdentity: true, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

func ping(c *redis.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}
