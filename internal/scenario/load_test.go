package scenario_test

import (
	"errors"
	"github.com/rlctl/rlctl/internal/scenario"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/threshold"
	"github.com/rlctl/rlctl/internal/workload"
)

func mustThreshold(t *testing.T, expr string, line int) threshold.Threshold {
	t.Helper()
	th, err := threshold.Parse(expr)
	if err != nil {
		t.Fatalf("threshold.Parse(%q): %v", expr, err)
	}
	th.Line = line
	return th
}

func TestLoadRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want func(t *testing.T) []*scenario.Scenario
	}{
		{
			file: "testdata/full.yaml",
			want: func(t *testing.T) []*scenario.Scenario {
				return []*scenario.Scenario{{
					Name:        "lua-fixed-window-holds",
					Description: "One Lua script decides atomically, so the published cap holds under overload.",
					File:        "testdata/full.yaml", Line: 1,
					Limit: rate.Limit{Count: 20, Window: time.Second}, Shows: design.ShowsHolds, MaxErrorRate: 0.05,
					Target: scenario.Target{
						Kind: scenario.KindSimulated, Algorithm: "redis-fixed-window", Gateways: 50,
						Redis: scenario.RedisEmbedded, Timeout: 50 * time.Millisecond, Prefix: "rl:", Key: scenario.KeyIdentity,
						Endpoints: []scenario.Endpoint{
							{Name: "login", Share: 0.2, OnError: design.OnErrorClosed, OnFailover: design.OnFailoverDeny, Timeout: 50 * time.Millisecond},
							{Name: "feed", Share: 0.8, OnError: design.OnErrorOpen, OnFailover: design.OnFailoverTrust, Timeout: 50 * time.Millisecond},
						},
					},
					Traffic: scenario.Traffic{
						Pattern: workload.PatternConstant, Rate: rate.Limit{Count: 400, Window: time.Second},
						Duration: 5 * time.Second, MaxRequests: 100000, Identities: 4,
						Spread: workload.SpreadRoundRobin, Model: workload.ModelOpen,
					},
					Faults: []scenario.Fault{
						{At: 2 * time.Second, Action: design.FaultFailover, Gateway: -1, Line: 22},
						{At: 3 * time.Second, For: time.Second, Action: design.FaultRedisLatency, Latency: 90 * time.Millisecond, Gateway: -1, Line: 23},
					},
					Thresholds: []threshold.Threshold{
						mustThreshold(t, "ceiling <= limit", 25),
						mustThreshold(t, "race_excess == 0", 26),
						mustThreshold(t, "p99 < 5ms", 27),
					},
				}}
			},
		},
		{
			file: "testdata/minimal.yaml",
			want: func(t *testing.T) []*scenario.Scenario {
				defaults := scenario.Target{
					Kind: scenario.KindSimulated, Gateways: 1, Redis: scenario.RedisEmbedded, Timeout: scenario.DefaultTimeout, Prefix: "rl:",
					Key: scenario.KeyIdentity, Endpoints: []scenario.Endpoint{{Name: "default", Share: 1, OnError: design.OnErrorOpen, OnFailover: design.OnFailoverTrust, Timeout: scenario.DefaultTimeout}},
				}
				first, second := defaults, defaults
				first.Algorithm = "local-fixed-window"
				second.Algorithm, second.Gateways, second.Pause = "redis-get-incr", 8, 2*time.Millisecond
				return []*scenario.Scenario{
					{
						Name: "minimal", File: "testdata/minimal.yaml", Line: 1,
						Limit: rate.Limit{Count: 100, Window: time.Minute}, Shows: design.ShowsHolds, MaxErrorRate: scenario.DefaultMaxErrorRate,
						Target: first,
						Traffic: scenario.Traffic{
							Pattern: workload.PatternConstant, Rate: rate.Limit{Count: 10, Window: time.Second},
							Duration: scenario.DefaultDuration, MaxRequests: scenario.DefaultMaxRequests, Identities: 1,
							Spread: workload.SpreadRoundRobin, Model: workload.ModelOpen,
						},
						Thresholds: []threshold.Threshold{mustThreshold(t, "ceiling <= limit", 8)},
					},
					{
						Name: "race", File: "testdata/minimal.yaml", Line: 10,
						Limit: rate.Limit{Count: 5, Window: time.Second}, Shows: design.ShowsHolds, MaxErrorRate: scenario.DefaultMaxErrorRate,
						Target: second,
						Traffic: scenario.Traffic{
							Pattern: workload.PatternRace, Duration: scenario.DefaultDuration, MaxRequests: scenario.DefaultMaxRequests,
							Identities: 1, Spread: workload.SpreadRoundRobin, Rounds: scenario.DefaultRounds, Model: workload.ModelOpen,
						},
					},
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			t.Parallel()
			got, err := scenario.Load([]string{tt.file})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := tt.want(t)
			if len(got) != len(want) {
				t.Fatalf("got %d scenarios, want %d", len(got), len(want))
			}
			for i := range want {
				diffScenario(t, i, got[i], want[i])
			}
		})
	}
}

func TestLoadDirectoryAndUniqueness(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yml", "name: beta\nlimit: 1/s\ntarget: {algorithm: redis-gcra}\ntraffic: {rate: 5/s}\n")
	write("a.yaml", "name: alpha\nlimit: 1/s\ntarget: {algorithm: redis-gcra}\ntraffic: {rate: 5/s}\n")
	write("notes.txt", "not a scenario")

	scs, err := scenario.Load([]string{dir})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := strings.Join(scenario.Names(scs), ","); got != "alpha,beta" {
		t.Errorf("names = %s, want alpha,beta (sorted by file, .txt ignored)", got)
	}

	write("c.yaml", "name: alpha\nlimit: 1/s\ntarget: {algorithm: redis-gcra}\ntraffic: {rate: 5/s}\n")
	_, err = scenario.Load([]string{dir})
	if err == nil || !strings.Contains(err.Error(), "c.yaml:1: name: scenario name \"alpha\" is already used at "+filepath.Join(dir, "a.yaml")+":1") {
		t.Fatalf("duplicate name: err = %v", err)
	}
	if exitcode.Of(err) != exitcode.Usage {
		t.Errorf("exit code = %d, want %d", exitcode.Of(err), exitcode.Usage)
	}
}

func TestLoadFS(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"suite/one.yaml":   {Data: []byte("name: one\nlimit: 3/s\ntarget:\n  kind: redis-script\n  script: lua/x.lua\n  keys: [\"k:{id}\"]\n  allowed: \"> 0\"\ntraffic: {rate: 5/s}\n")},
		"suite/lua/x.lua":  {Data: []byte("return 1")},
		"suite/two.yml":    {Data: []byte("name: two\nlimit: 3/s\ntarget: {algorithm: leasing, lease: {size: 4}}\ntraffic: {pattern: race}\n")},
		"suite/README.md":  {Data: []byte("# not yaml")},
		"suite/sub/x.yaml": {Data: []byte("not: loaded")},
	}
	scs, err := scenario.LoadFS(fsys, "suite")
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	if len(scs) != 2 {
		t.Fatalf("got %d scenarios, want 2", len(scs))
	}
	if scs[0].Name != "one" || scs[0].Target.Kind != scenario.KindRedisScript {
		t.Errorf("first scenario %s of kind %s, want one, redis-script", scs[0].Name, scs[0].Target.Kind)
	}
	if l := scs[1].Target.Lease; l.Size != 4 || l.RefillBelow != scenario.DefaultRefillBelow {
		t.Errorf("lease = %+v, want size 4 and default refill_below", l)
	}
	if _, err := scenario.LoadFS(fsys, "missing"); err == nil {
		t.Error("LoadFS of a missing path: want an error")
	}
}

func TestErrorsUnwrap(t *testing.T) {
	t.Parallel()
	_, err := scenario.Parse([]byte("name: x\nlimit: 1/s\nbogus: 1\ntarget: {algorithm: redis-gcra}\ntraffic: {rate: 1/s}\n"), "x.yaml")
	var e *scenario.Error
	if !errors.As(err, &e) {
		t.Fatalf("errors.As(*Error) failed for %v", err)
	}
	if e.File != "x.yaml" || e.Line != 3 || e.Path != "bogus" {
		t.Errorf("error = %+v, want x.yaml line 3 path bogus", e)
	}
}

// diffScenario reports which top-level part of a scenario differs, with
// both values printed field by field (Target's String would hide them).
func diffScenario(t *testing.T, i int, got, want *scenario.Scenario) {
	t.Helper()
	gv, wv := reflect.ValueOf(*got), reflect.ValueOf(*want)
	for f := 0; f < gv.NumField(); f++ {
		if !reflect.DeepEqual(gv.Field(f).Interface(), wv.Field(f).Interface()) {
			t.Errorf("scenario %d: %s:\n got %#v\nwant %#v", i, gv.Type().Field(f).Name, gv.Field(f).Interface(), wv.Field(f).Interface())
		}
	}
}

// TestShows: shows says whether a scenario demonstrates a flaw or proves a
// design holds; a scenario that says nothing proves a design holds.
func TestShows(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{"": design.ShowsHolds, "shows: holds\n": design.ShowsHolds, "shows: flaw\nthresholds: [ceiling > limit]\n": design.ShowsFlaw} {
		scs, err := scenario.Parse([]byte(base+doc), "s.yaml")
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if got := scs[0].Shows; got != want {
			t.Errorf("%q: shows %q, want %q", doc, got, want)
		}
	}
	// A flaw names what demonstrates it: without thresholds the claim
	// would be the published cap, the opposite of a flaw.
	if _, err := scenario.Parse([]byte(base+"shows: flaw\n"), "s.yaml"); err == nil || !strings.Contains(err.Error(), "s.yaml:7: shows: flaw: name the thresholds") {
		t.Errorf("a flaw without thresholds: %v", err)
	}
}

// An empty file, or one of empty documents, is no suite: an error naming
// the file, never a run of nothing.
func TestEmptyFileIsAnError(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "\n# nothing here\n", "---\n---\n"} {
		_, err := scenario.Parse([]byte(doc), "empty.yaml")
		if err == nil || !strings.Contains(err.Error(), "empty.yaml: no scenario in this file: it is empty") {
			t.Errorf("%q: %v", doc, err)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("# later\n"), 0o644)
	if _, err := scenario.Load([]string{dir}); err == nil || !strings.Contains(err.Error(), "a.yaml: no scenario") || !strings.Contains(err.Error(), "b.yaml: no scenario") {
		t.Errorf("a directory of empty files: %v", err)
	}
}
