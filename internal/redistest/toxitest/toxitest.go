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
// binary. It is built as the Dockerfile's binary is (CGO_ENABLED=0,
// -trimpath), so it shares that build's standard library and modules
// (make test compiles it before any test runs). go tool would keep the
// binary in Go's cache, but it takes no -trimpath, and so compiled the
// standard library a third time: 40s of a cold make test here.
//
// Each build is written beside the one path in the user's cache directory
// and renamed onto it, so test binaries building at once never run a
// half-written file, and a run leaves one file behind, not one each.
func serverBinary() (string, error) {
	binary.once.Do(func() {
		binary.path, binary.err = buildServer()
	})
	return binary.path, binary.err
}

// buildServer builds the server for serverBinary and returns its path.
func buildServer() (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("a directory for toxiproxy's server: %w", err)
	}
	dir := filepath.Join(cache, "rlctl-test")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "toxiproxy-server-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // left only when the rename failed
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", tmp.Name(), toolPath)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build toxiproxy's server (go build %s): %w\n%s", toolPath, err, out)
	}
	bin := filepath.Join(dir, "toxiproxy-server")
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// API starts a Toxiproxy server of t's own on a free loopback port, killed
// when t ends, and returns its API's URL.
func API(t testing.TB) string {
	t.Helper()
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	var api string
	redistest.StartOnFreePort(t, "address already in use", func(port int) (log string, up bool) {
		api, log, up = runAPI(t, bin, port)
		return log, up
	})
	return api
}

// runAPI starts Toxiproxy on port and waits until it answers. It returns
// Toxiproxy's output and false when Toxiproxy exited first.
func runAPI(t testing.TB, bin string, port int) (api, logs string, ok bool) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = &out, &out
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
	api = fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		// A new Toxiproxy lists no proxies: another server that took the
		// port would not answer that.
		fresh, err := answersNoProxies(api)
		if fresh {
			return api, "", true
		}
		select {
		case <-exited:
			return api, out.String(), false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("toxiproxy never answered on %s: %v", api, err)
		}
	}
}

// answersNoProxies reports whether api's proxy list is an empty JSON object.
func answersNoProxies(api string) (bool, error) {
	resp, err := http.Get(api + "/proxies")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var proxies map[string]json.RawMessage
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET /proxies: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&proxies); err != nil {
		return false, fmt.Errorf("GET /proxies: %v", err)
	}
	return proxies != nil && len(proxies) == 0, nil
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
