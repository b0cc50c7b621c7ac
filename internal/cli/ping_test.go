package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redistest"
)

func TestNewCmdPingArgs(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantCount int
		wantCode  exitcode.Code
	}{
		{"default", []string{}, 10, exitcode.OK},
		{"count", []string{"--count", "50"}, 50, exitcode.OK},
		{"short", []string{"-c", "3"}, 3, exitcode.OK},
		{"zero", []string{"--count", "0"}, 0, exitcode.Usage},
		{"too many", []string{"--count", "100001"}, 0, exitcode.Usage},
		{"positional", []string{"x"}, 0, exitcode.Failed}, // cobra's arg check; Run maps it (see TestUsageErrorsExit2)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := testFactory(io.Discard, nil)
			var got *pingOptions
			cmd := newCmdPing(f, func(o *pingOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if tt.wantCode == exitcode.OK {
				if err != nil {
					t.Fatalf("Execute: %v", err)
				}
				if got == nil || got.Count != tt.wantCount {
					t.Fatalf("options = %+v, want count %d", got, tt.wantCount)
				}
				return
			}
			if err == nil {
				t.Fatal("Execute succeeded")
			}
			if tt.wantCode == exitcode.Usage && exitcode.Of(err) != exitcode.Usage {
				t.Errorf("exit code %d, want %d", exitcode.Of(err), exitcode.Usage)
			}
			if got != nil {
				t.Error("runF called despite the error")
			}
		})
	}
}

func TestRunPingJSON(t *testing.T) {
	s := redistest.Start(t)
	tests := []struct {
		name, url, wantURL, wantVersionPrefix string
	}{
		{"real server", s.URL(), s.URL(), ""},
		{"embedded", "embedded", "embedded", "miniredis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &bytes.Buffer{}
			f, errOut := testFactory(out, map[string]string{"RLCTL_REDIS_URL": tt.url})
			if code := Run(f, []string{"ping", "-o", "json", "--count", "7"}, nil, func(int) {}); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var res pingResult
			dec := json.NewDecoder(out)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&res); err != nil {
				t.Fatalf("decode %q: %v", out, err)
			}
			if res.URL != tt.wantURL || res.Mode != "standalone" || len(res.Nodes) != 1 {
				t.Errorf("result %+v", res)
			}
			if !strings.HasPrefix(res.Nodes[0].Version, tt.wantVersionPrefix) || res.Nodes[0].Role != "master" {
				t.Errorf("node %+v", res.Nodes[0])
			}
			r := res.RTT
			if r.Count != 7 || !(r.Min <= r.P50 && r.P50 <= r.P90 && r.P90 <= r.P99 && r.P99 <= r.Max) || r.Max <= 0 {
				t.Errorf("rtt %+v: want 7 pings, ordered percentiles", r)
			}
		})
	}
}

func TestPingUnreachableWithinTimeout(t *testing.T) {
	addr, _ := redistest.Silent(t)
	tests := []struct{ name, url, want string }{
		{"nothing listens", "redis://admin:hunter2-secret@127.0.0.1:1", "connection refused"},
		{"never answers", "redis://admin:hunter2-secret@" + addr, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &bytes.Buffer{}
			f, errOut := testFactory(out, nil)
			done := make(chan int, 1)
			go func() {
				done <- Run(f, []string{"ping", "--redis", tt.url, "--timeout", "300ms"}, nil, func(int) {})
			}()
			var code int
			select {
			case code = <-done:
			case <-time.After(20 * time.Second): // far beyond the 300ms timeout: a hang
				t.Fatal("ping hung past its timeout")
			}
			if code != int(exitcode.Unreachable) {
				t.Errorf("exit %d, want %d", code, exitcode.Unreachable)
			}
			// The first line says the password is visible in ps (it is on
			// the command line here); the error is one line after it.
			hint, msg, _ := strings.Cut(errOut.String(), "\n")
			if !strings.Contains(hint, "REDISCLI_AUTH") {
				t.Errorf("no REDISCLI_AUTH hint: %q", errOut.String())
			}
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "rlctl: redis redis://admin:xxxxx@") {
				t.Errorf("stderr is not one redacted line: %q", msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q does not say %q", msg, tt.want)
			}
			if strings.Contains(msg+out.String(), "hunter2") {
				t.Error("password printed")
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty: %q", out)
			}
		})
	}
}

func TestSummarise(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var d []time.Duration
		for _, n := range ns {
			d = append(d, time.Duration(n)*time.Millisecond)
		}
		return d
	}
	tests := []struct {
		name string
		in   []time.Duration
		want pingRTT
	}{
		{"one", ms(4), pingRTT{Count: 1, Min: 4, P50: 4, P90: 4, P99: 4, Max: 4}},
		{"ten unsorted", ms(10, 1, 9, 2, 8, 3, 7, 4, 6, 5), pingRTT{Count: 10, Min: 1, P50: 5, P90: 9, P99: 10, Max: 10}},
		{"two", ms(1, 3), pingRTT{Count: 2, Min: 1, P50: 1, P90: 3, P99: 3, Max: 3}},
		{"sub-millisecond", []time.Duration{1500 * time.Microsecond, 250 * time.Microsecond}, pingRTT{Count: 2, Min: 0.25, P50: 0.25, P90: 1.5, P99: 1.5, Max: 1.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarise(tt.in); got != tt.want {
				t.Errorf("summarise = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestSummariseMatchesBruteForce compares the nearest-rank percentile with
// a count: the p-th percentile is the smallest value with at least p of
// the samples at or below it.
func TestSummariseMatchesBruteForce(t *testing.T) {
	for n := 1; n <= 60; n++ {
		in := make([]time.Duration, n)
		for i := range in {
			in[i] = time.Duration((i*7919)%97+1) * time.Millisecond
		}
		got := summarise(in)
		for _, c := range []struct {
			p   float64
			val float64
		}{{0.5, got.P50}, {0.9, got.P90}, {0.99, got.P99}} {
			var want time.Duration = -1
			for _, cand := range in {
				atOrBelow := 0
				for _, x := range in {
					if x <= cand {
						atOrBelow++
					}
				}
				if float64(atOrBelow) >= c.p*float64(n) && (want < 0 || cand < want) {
					want = cand
				}
			}
			if float64(want.Milliseconds()) != c.val {
				t.Fatalf("n=%d p=%v: got %vms, brute force %v", n, c.p, c.val, want)
			}
		}
	}
}
