package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rlctl/rlctl/internal/discover"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redistest"
)

func TestNewCmdDiscoverArgs(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		check    func(*discoverOptions) bool
		wantCode exitcode.Code
	}{
		{"defaults", []string{"http://127.0.0.1:1/"}, func(o *discoverOptions) bool {
			return o.Budget == discover.DefaultBudget && o.IdentityHeader == "X-API-Key" && o.Method == "GET" && len(o.DeniedStatus) == 1 && o.DeniedStatus[0] == 429
		}, exitcode.OK},
		{"query", []string{"--identity-query", "key", "http://h/", "http://g/"}, func(o *discoverOptions) bool {
			return o.IdentityQuery == "key" && o.IdentityHeader == "" && len(o.URLs) == 2
		}, exitcode.OK},
		{"id in the URL", []string{"http://h/users/{id}"}, func(o *discoverOptions) bool { return o.IdentityHeader == "" }, exitcode.OK},
		{"headers and body", []string{"--header", "Authorization: Bearer {id}", "--method", "POST", "--body", `{"u":"{id}"}`, "--denied-status", "503,429", "http://h/"}, func(o *discoverOptions) bool {
			return o.headers()["Authorization"] == "Bearer {id}" && o.Method == "POST" && o.IdentityHeader == "" && len(o.DeniedStatus) == 2
		}, exitcode.OK},
		{"two ways", []string{"--identity-header", "A", "--identity-query", "b", "http://h/"}, nil, exitcode.Usage},
		{"small budget", []string{"--budget", "5", "http://h/"}, nil, exitcode.Usage},
		{"bad header", []string{"--header", "nocolon", "http://h/"}, nil, exitcode.Usage},
		{"bad URL", []string{"ftp://h/"}, nil, exitcode.Usage},
		{"bad status", []string{"--denied-status", "42", "http://h/"}, nil, exitcode.Usage},
		{"no URL", nil, nil, exitcode.Failed}, // cobra's arg check; Run maps it to 2
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := testFactory(io.Discard, nil)
			var got *discoverOptions
			cmd := newCmdDiscover(f, func(o *discoverOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if tt.wantCode == exitcode.OK {
				if err != nil {
					t.Fatalf("Execute: %v", err)
				}
				if got == nil || !tt.check(got) {
					t.Fatalf("options = %+v", got)
				}
				return
			}
			if err == nil {
				t.Fatal("Execute succeeded")
			}
			if tt.wantCode == exitcode.Usage && exitcode.Of(err) != exitcode.Usage {
				t.Errorf("exit code %d, want %d: %v", exitcode.Of(err), exitcode.Usage, err)
			}
		})
	}
}

// discoverJSON runs `rlctl discover -o json` with args and decodes its
// result.
func discoverJSON(t *testing.T, wantCode int, args ...string) discover.Result {
	t.Helper()
	out := &bytes.Buffer{}
	f, errOut := testFactory(out, nil)
	if code := Run(f, append([]string{"discover", "-o", "json"}, args...), nil, noExit(t)); code != wantCode {
		t.Fatalf("discover exit %d, want %d: %s\n%s", code, wantCode, errOut, out)
	}
	var res discover.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	return res
}

// TestDiscoverScenarioPinsThePolicy discovers `rlctl gateway serve` on a
// real redis-server, writes --scenario, and checks that `rlctl verify`
// passes it against the same gateway and fails it against one whose
// limit was doubled: the scenario pins the policy.
func TestDiscoverScenarioPinsThePolicy(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct{ algorithm, limit, doubled string }{
		{"redis-fixed-window", "10/1s", "20/1s"},
		{"redis-gcra", "10/1s", "20/1s"},
		{"redis-sliding-log", "10/1s", "20/1s"},
		{"redis-sliding-window", "10/1s", "20/1s"},
		{"redis-fixed-window-refresh", "10/1s", "20/1s"},
	} {
		t.Run(tc.algorithm, func(t *testing.T) {
			t.Parallel()
			sig := make(chan os.Signal, 1)
			url, done, errOut := startServe(t, srv, sig, noExit(t), "--algorithm", tc.algorithm, "--limit", tc.limit, "--prefix", "rl:"+tc.algorithm+":")
			file := filepath.Join(t.TempDir(), "pinned.yaml")
			res := discoverJSON(t, 0, "--scenario", file, url)
			if !res.Found || res.Policy.Evidence["algorithm"].Evidence == "" {
				t.Fatalf("result %+v", res)
			}
			verifyExit := func(want int) {
				t.Helper()
				out := &bytes.Buffer{}
				f, vErr := testFactory(out, nil)
				if code := Run(f, []string{"verify", file, "--report-dir", t.TempDir(), "--no-progress"}, nil, noExit(t)); code != want {
					sc, _ := os.ReadFile(file)
					t.Fatalf("verify exit %d, want %d:\n%s\n%s\n%s\ndiscover said %s", code, want, sc, out, vErr, discoverEvidence(res))
				}
			}
			verifyExit(0)
			sig <- syscall.SIGTERM
			wantExit(t, done, 0, errOut)
			// The same URL's port now serves twice the limit: the pinned
			// scenario must fail.
			sig2 := make(chan os.Signal, 1)
			url2, done2, errOut2 := startServe(t, srv, sig2, noExit(t), "--algorithm", tc.algorithm, "--limit", tc.doubled, "--prefix", "rl:"+tc.algorithm+":2:")
			sc, _ := os.ReadFile(file)
			if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(sc), url, url2)), 0o644); err != nil {
				t.Fatal(err)
			}
			verifyExit(1)
			sig2 <- syscall.SIGTERM
			wantExit(t, done2, 0, errOut2)
		})
	}
}

// discoverEvidence is res's summary, every figure's evidence and its
// notes, one to a line: why discover concluded what it did.
func discoverEvidence(res discover.Result) string {
	var b strings.Builder
	b.WriteString(res.Summary + "\n")
	for _, k := range slices.Sorted(maps.Keys(res.Policy.Evidence)) {
		ev := res.Policy.Evidence[k]
		fmt.Fprintf(&b, "  %s (%.2f): %s\n", k, ev.Confidence, ev.Evidence)
	}
	for _, n := range res.Notes {
		b.WriteString("  note: " + n + "\n")
	}
	return b.String()
}

// TestDiscoverSharedGatewayServes runs two `rlctl gateway serve`
// processes on one redis-server: discover finds them sharing one limit.
func TestDiscoverSharedGatewayServes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var urls []string
	for range 2 {
		sig := make(chan os.Signal, 1)
		url, done, errOut := startServe(t, srv, sig, noExit(t), "--limit", "10/1s", "--prefix", "rl:shared:")
		urls = append(urls, url)
		t.Cleanup(func() { sig <- syscall.SIGTERM; wantExit(t, done, 0, errOut) })
	}
	res := discoverJSON(t, 0, urls...)
	if res.Policy.Shared == nil || !*res.Policy.Shared {
		t.Errorf("shared %v (nil: not judged), want true: %s; notes %q", deref(res.Policy.Shared), res.Policy.Evidence["shared"].Evidence, res.Notes)
	}
	if res.Policy.Algorithm != discover.FixedWindow || res.Policy.Limit != 10 {
		t.Errorf("policy %+v, want a fixed window of 10", res.Policy)
	}
}

// TestDiscoverExitCodes: an endpoint that never denies is exit 1 with
// "no limit found within N requests"; a closed port is exit 3.
func TestDiscoverExitCodes(t *testing.T) {
	open := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer open.Close()
	res := discoverJSON(t, 1, "--budget", "40", open.URL+"/")
	if res.Found || res.Policy.Algorithm != discover.None || !strings.Contains(res.Summary, "no limit found within") {
		t.Errorf("result %+v, want none found", res)
	}
	for _, n := range res.PerIdentity {
		if n > 40 {
			t.Errorf("an identity was sent %d requests, budget 40", n)
		}
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL + "/"
	closed.Close()
	f, errOut := testFactory(io.Discard, nil)
	if code := Run(f, []string{"discover", url}, nil, noExit(t)); code != int(exitcode.Unreachable) {
		t.Errorf("closed port: exit %d, want 3: %s", code, errOut)
	}
}

// TestHelpDiscoverExplainsEveryFigure: every field of the JSON policy and
// every class is explained in `rlctl help discover`.
func TestHelpDiscoverExplainsEveryFigure(t *testing.T) {
	out := &bytes.Buffer{}
	f, errOut := testFactory(out, nil)
	if code := Run(f, []string{"help", "discover"}, nil, noExit(t)); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	help := out.String()
	pt := reflect.TypeOf(discover.Policy{})
	for i := range pt.NumField() {
		name, _, _ := strings.Cut(pt.Field(i).Tag.Get("json"), ",")
		if name == "evidence" || name == "denied_status" {
			continue // the evidence map itself; the status is the flag's
		}
		if !strings.Contains(help, name) {
			t.Errorf("help discover does not explain %s", name)
		}
	}
	for _, c := range discover.Classes {
		if !strings.Contains(help, c) {
			t.Errorf("help discover does not name the class %s", c)
		}
	}
	if !strings.Contains(help, "Exit status:") {
		t.Error("help discover lists no exit codes")
	}
}

// deref is what p points to, or nil.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
