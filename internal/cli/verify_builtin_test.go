package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/scenarios"
)

// verifyDir runs `rlctl verify` on dir and returns the exit code, the
// report and stderr.
func verifyDir(t *testing.T, dir string, extra ...string) (int, map[string]any, string) {
	t.Helper()
	reports := t.TempDir()
	f, errOut := testFactory(&bytes.Buffer{}, nil)
	args := append([]string{"verify", "--no-progress", "--report-dir", reports, dir}, extra...)
	code := Run(f, args, nil, func(int) {})
	files, _ := filepath.Glob(filepath.Join(reports, "*", "report.json"))
	if len(files) != 1 {
		t.Fatalf("want one report.json, found %v\n%s", files, errOut.String())
	}
	b, _ := os.ReadFile(files[0])
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return code, rep, errOut.String()
}

// retarget rewrites every built-in scenario to drive target instead (its
// faults and deployment requirement dropped, as rlctl cannot inject them
// into a foreign target nor choose its Redis), with
// its limit, traffic (300ms of it) and thresholds as they are.
func retarget(t *testing.T, target map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	files, _ := fs.Glob(scenarios.FS, "*.yaml")
	for _, name := range files {
		b, _ := fs.ReadFile(scenarios.FS, name)
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		doc["target"] = target
		delete(doc, "faults")
		delete(doc, "requires") // the foreign target is what is measured now
		tr := doc["traffic"].(map[string]any)
		tr["duration"] = "300ms"
		out, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 15 {
		t.Fatalf("only %d built-in scenarios", len(files))
	}
	return dir
}

// noPass requires every scenario of rep to be anything but a pass.
func noPass(t *testing.T, rep map[string]any) {
	t.Helper()
	for _, s := range rep["scenarios"].([]any) {
		sc := s.(map[string]any)
		if sc["status"] == "pass" {
			t.Errorf("%s passed on a target that never answered", sc["name"])
		}
	}
}

// Every built-in scenario's thresholds, held against a target that never
// answers, must not pass: whether it is silent from the start (found by
// the probe before the run) or answers the probe and nothing after (found
// by the validity check after it). Either way rlctl exits 3.
func TestNoBuiltinScenarioPassesOnATargetThatNeverAnswers(t *testing.T) {
	t.Parallel()
	silent, _ := redistest.Silent(t)
	var answered atomic.Bool
	probeOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") == "rlctl-probe" {
			return // a 200 for every probe
		}
		answered.Store(true)
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	defer probeOnly.Close()

	// The two targets' runs go side by side (they time nothing); the group
	// returns once both are done.
	t.Run("targets", func(t *testing.T) {
		for _, tt := range []struct{ name, url string }{
			{"silent", "http://" + silent + "/"},
			{"answers only the probe", probeOnly.URL + "/"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				dir := retarget(t, map[string]any{"kind": "http", "urls": []string{tt.url}, "timeout": "150ms"})
				code, rep, stderr := verifyDir(t, dir)
				if code != int(exitcode.Unreachable) {
					t.Errorf("exit %d, want 3\n%s", code, stderr)
				}
				noPass(t, rep)
			})
		}
	})
	if !answered.Load() {
		t.Error("no run got past the probe: the validity check was not exercised")
	}
}

// A Redis that dies mid-run without a planned fault: exit 3, and the
// report says when the design stopped being measured.
func TestVerifyExitsThreeWhenRedisDiesMidRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	// A timeout a stalled test machine does not reach before the kill, so
	// the outage is the kill's; a dead server's refusals come at once.
	doc := `name: redis-dies
limit: 20/1s
target: {algorithm: redis-fixed-window, gateways: 2, timeout: 1500ms}
traffic: {rate: 200/s, duration: 2500ms}
thresholds: [ceiling <= limit]
`
	if err := os.WriteFile(filepath.Join(dir, "dies.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// The kill comes half a second after the run's first key appears, its
	// traffic under way however long a busy machine took to set it up, and
	// is compared with the run's start afterwards.
	killed := make(chan time.Time, 1)
	watch := srv.Client(t)
	go func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if n, err := watch.DBSize(context.Background()).Result(); err == nil && n > 0 {
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
		at := time.Now() // before the kill, which waits for the process to exit
		srv.Deployment.Kill(0)
		killed <- at
	}()
	code, rep, stderr := verifyDir(t, dir, "--redis", srv.URL())
	if code != int(exitcode.Unreachable) {
		t.Errorf("exit %d, want 3\n%s", code, stderr)
	}
	sc := rep["scenarios"].([]any)[0].(map[string]any)
	outages, _ := sc["outages"].([]any)
	if sc["status"] != "error" || len(outages) == 0 {
		t.Fatalf("status %v, outages %v", sc["status"], sc["outages"])
	}
	started, err := time.Parse(time.RFC3339Nano, fmt.Sprint(sc["started"]))
	if err != nil {
		t.Fatalf("started %v: %v", sc["started"], err)
	}
	// The kill's outage lasts to the run's end, so it is the last: an
	// earlier one would be a stall the timeout did not cover.
	at := float64((<-killed).Sub(started).Milliseconds())
	if o := outages[len(outages)-1].(map[string]any); o["fail_open"].(float64) == 0 || o["from_ms"].(float64) < at-500 {
		t.Errorf("last outage %v (of %d): want fail-open decisions from the kill at %vms on", o, len(outages), at)
	}
	if msg := fmt.Sprint(sc["error"]); !strings.Contains(msg, "Redis did not decide") {
		t.Errorf("error %q does not say what happened", msg)
	}
}
