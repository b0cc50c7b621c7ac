// Package toxitest runs a real Toxiproxy server, from its own Go module,
// inside a test binary, for the tests of network faults on a deployment.
// Only tests import it.
package toxitest

import (
	"bytes"
	"encoding/json"
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

// Call sends in (JSON, when not nil) to the Toxiproxy API api as another
// user of it would, decodes the answer into out when not nil, and fails t
// on an error or an error status.
func Call(t testing.TB, api, method, path string, in, out any) {
	t.Helper()
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, api+path, &body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

// NewProxy creates, on the Toxiproxy API api, a proxy named name in front
// of upstream, deleted when the test ends, and returns the address it
// listens on: where the gateways connect.
func NewProxy(t testing.TB, api, name, upstream string) string {
	t.Helper()
	var p struct {
		Listen string `json:"listen"`
	}
	Call(t, api, http.MethodPost, "/proxies", map[string]any{"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true}, &p)
	t.Cleanup(func() { Call(t, api, http.MethodDelete, "/proxies/"+name, nil, nil) })
	return p.Listen
}
