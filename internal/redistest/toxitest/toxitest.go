// Package toxitest runs a real Toxiproxy server, from its own Go module,
// inside a test binary, for the tests of network faults on a deployment.
// Only tests import it.
package toxitest

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	toxiserver "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/rlctl/rlctl/internal/redistest"
)

var server struct {
	once sync.Once
	api  string
	err  error
}

// API starts the test binary's Toxiproxy on a free loopback port the first
// time it is called (its API server cannot be stopped: one per binary, the
// tests each with proxies of their own) and returns its API's URL.
func API(t testing.TB) string {
	t.Helper()
	server.once.Do(func() {
		port := redistest.FreePort(t)
		srv := toxiserver.NewServer(toxiserver.NewMetricsContainer(nil), zerolog.Nop())
		go srv.Listen("127.0.0.1", strconv.Itoa(port))
		server.api = fmt.Sprintf("http://127.0.0.1:%d", port)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			resp, err := http.Get(server.api + "/version")
			if err == nil {
				resp.Body.Close()
				return
			}
			if time.Now().After(deadline) {
				server.err = fmt.Errorf("toxiproxy never answered on %s: %w", server.api, err)
				return
			}
		}
	})
	if server.err != nil {
		t.Fatal(server.err)
	}
	return server.api
}
