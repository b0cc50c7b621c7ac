package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/target/httptarget"
)

// slowGateway answers 200 after delay, except the probe rlctl sends
// before the run (identity httptarget.ProbeID), which it answers at once,
// so a request timeout shorter than delay is met inside the run.
func slowGateway(delay time.Duration, seen *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != httptarget.ProbeID {
			seen.Add(1)
			time.Sleep(delay)
		}
		w.WriteHeader(http.StatusOK)
	})
}

// A real gateway answering in 60ms is measured with an http target's
// default timeout (request_timeout 5s), over the fast client (http://) and
// net/http (https://) alike; with request_timeout shorter than its answers,
// the run's error names the field and its value.
func TestVerifyHTTPRequestTimeout(t *testing.T) {
	var seen atomic.Int64
	plain := httptest.NewServer(slowGateway(60*time.Millisecond, &seen))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(slowGateway(60*time.Millisecond, &seen))
	defer tlsSrv.Close()
	for _, tt := range []struct {
		name, url, extra string
		want             string // in the report's error; "" for a clean pass
	}{
		{"default over http", plain.URL, "", ""},
		{"default over https", tlsSrv.URL, "  tls: {insecure_skip_verify: true}\n", ""},
		{"30ms over http", plain.URL, "  request_timeout: 30ms\n", "no answer after target.request_timeout 30ms"},
		{"30ms over https", tlsSrv.URL, "  request_timeout: 30ms\n  tls: {insecure_skip_verify: true}\n", "no answer after target.request_timeout 30ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			doc := fmt.Sprintf("name: slow-gateway\nlimit: 1000/1s\ntarget:\n  kind: http\n  urls: [%q]\n%straffic: {rate: 40/s, duration: 500ms}\nthresholds: [allowed > 0]\n", tt.url, tt.extra)
			scen := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(scen, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			before := seen.Load()
			reports := filepath.Join(dir, "reports")
			out := &syncBuffer{}
			f, errOut := testFactory(out, nil)
			code := Run(f, []string{"verify", "--no-progress", "--report-dir", reports, scen}, nil, noExit(t))
			if (code == 0) != (tt.want == "") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			runs, _ := filepath.Glob(filepath.Join(reports, "*"))
			if len(runs) != 1 {
				t.Fatalf("run directories %v", runs)
			}
			r := readReportJSON(t, runs[0])
			sc := r["scenarios"].([]any)[0].(map[string]any)
			m := sc["metrics"].(map[string]any)
			// The gateway's own count shows the load reached it. Under a 30ms
			// timeout, a request cut off closes its connection, and the next
			// one's TLS handshake may itself outlast 30ms on a busy machine
			// and never reach the handler: there rlctl's count of requests
			// sent must show the load, and the gateway must have seen some.
			sent := seen.Load() - before
			requests, _ := m["requests"].(float64)
			if tt.want == "" && sent < 10 || sent < 1 || requests < 10 {
				t.Fatalf("the gateway saw %d requests, rlctl counted %v sent", sent, m["requests"])
			}
			msg, _ := sc["error"].(string)
			if tt.want == "" {
				if sc["status"] != "pass" || m["errors"] != float64(0) || m["allowed"] != m["requests"] {
					t.Errorf("status %v, error %q, metrics %v: a gateway answering in 60ms was not measured", sc["status"], msg, m)
				}
				return
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not name the timeout (%q)", msg, tt.want)
			}
		})
	}
}
