package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/redistest/thirdgw"
	"github.com/rlctl/rlctl/internal/redistest/toxitest"
)

// Ctrl-C while rlctl holds a real deployment's Toxiproxy proxy down:
// verify exits 130 and the proxy is enabled again with no toxic of
// rlctl's left on it. Without --allow-faults the same file is refused
// before any request, exit 2, naming the flag.
func TestVerifyInterruptedUndoesToxiproxyFaults(t *testing.T) {
	api := toxitest.API(t)
	srv := redistest.Start(t)
	name := "redis-cli-interrupt"
	listen := toxitest.NewProxy(t, api, name, srv.Addr)
	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: thirdgw.RedisRate, Limit: 100, Window: time.Second, Timeout: 200 * time.Millisecond})

	dir := t.TempDir()
	scen := filepath.Join(dir, "down.yaml")
	os.WriteFile(scen, []byte(fmt.Sprintf(`name: down
limit: 100/1s
max_error_rate: 1
target:
  kind: http
  urls: [%s]
  identity: {header: X-API-Key}
  toxiproxy: {api: %s, proxy: %s}
traffic: {rate: 50/s, duration: 30s}
faults:
  - {at: 500ms, for: 20s, action: redis-down}
`, g.URL, api, name)), 0o644)

	f, errOut := testFactory(&syncBuffer{}, nil)
	if code := Run(f, []string{"verify", scen, "--no-progress", "--report-dir", filepath.Join(dir, "r0")}, make(chan os.Signal), noExit(t)); code != 2 || !strings.Contains(errOut.String(), "--allow-faults") {
		t.Fatalf("without --allow-faults: exit %d, %s", code, errOut.String())
	}
	if n := len(g.Log()); n != 0 {
		t.Fatalf("a refused scenario sent %d requests", n)
	}

	f, errOut = testFactory(&syncBuffer{}, nil)
	sig := make(chan os.Signal, 2)
	done := make(chan int)
	go func() {
		done <- Run(f, []string{"verify", scen, "--allow-faults", "--no-progress", "--report-dir", filepath.Join(dir, "r")}, sig, noExit(t))
	}()
	// Wait until the proxy is down, then interrupt.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var st struct {
			Enabled bool `json:"enabled"`
		}
		toxitest.Call(t, api, http.MethodGet, "/proxies/"+name, nil, &st)
		if !st.Enabled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy never went down: %s", errOut.String())
		}
	}
	sig <- os.Interrupt
	select {
	case code := <-done:
		if code != 130 {
			t.Fatalf("exit %d, want 130: %s", code, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("verify did not stop after the interrupt")
	}
	var st struct {
		Enabled bool              `json:"enabled"`
		Toxics  []json.RawMessage `json:"toxics"`
	}
	toxitest.Call(t, api, http.MethodGet, "/proxies/"+name, nil, &st)
	if !st.Enabled || len(st.Toxics) != 0 {
		t.Errorf("after the interrupt the proxy is enabled=%v with %d toxics: want it as it was", st.Enabled, len(st.Toxics))
	}
}
