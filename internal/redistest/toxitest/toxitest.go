// Package toxitest runs a real Toxiproxy server, built from its own Go
// module (go.mod's tool directive), as a process of its own for each test
// of network faults on a deployment. Only tests import it.
//
// Out of process, as a user runs it: in the test binary, under the race
// detector, Toxiproxy's own unsynchronised read of a proxy while its
// update runs (its API's show beside a disable) was reported as a race of
// the test's.
package toxitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/redistest"
)

// toolPath is Toxiproxy's server package, as go.mod's tool directive names it.
const toolPath = "github.com/Shopify/toxiproxy/v2/cmd/server"

var binary struct {
	once sync.Once
	path string
	err  error
}

// serverBinary is the Toxiproxy server's executable, built once per test
// binary into Go's build cache (make test builds it before any test runs).
func serverBinary() (string, error) {
	binary.once.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		cmd := exec.Command(gobin, "tool", "-n", toolPath)
		// Built as make test's NONRACE build (CGO_ENABLED=0, -trimpath),
		// it shares that build's standard library and modules, and finds
		// the binary make test built before the tests.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -trimpath"))
		out, err := cmd.Output()
		if err != nil {
			binary.err = fmt.Errorf("build toxiproxy's server (go tool -n %s): %w", toolPath, err)
			if ee, ok := err.(*exec.ExitError); ok {
				binary.err = fmt.Errorf("%w\n%s", binary.err, ee.Stderr)
			}
			return
		}
		binary.path = strings.TrimSpace(string(out))
	})
	return binary.path, binary.err
}

// API starts a Toxiproxy server of t's own on a free loopback port, killed
// when t ends, and returns its API's URL.
func API(t testing.TB) string {
	t.Helper()
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	port := redistest.FreePort(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start toxiproxy: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	api := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(api + "/version")
		if err == nil {
			resp.Body.Close()
			return api
		}
		select {
		case <-exited:
			t.Fatalf("toxiproxy exited before answering on %s: %s", api, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("toxiproxy never answered on %s: %v", api, err)
		}
	}
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
