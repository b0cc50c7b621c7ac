package verify

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/score"
)

// scriptScenario writes lua and a redis-script scenario running it (limit
// 20/10s, so one window spans the run; calls time out after 500ms, which a
// loaded machine's redis-server meets) on redisURL into a directory of the
// test's own, and loads it.
func scriptScenario(t *testing.T, lua, redisURL string) *scenario.Scenario {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine.lua"), []byte(lua), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `name: mine
limit: 20/10s
target:
  kind: redis-script
  script: mine.lua
  redis: ` + redisURL + `
  gateways: 2
  timeout: 500ms
  keys: ["rl:{id}"]
  args: ["{limit}", "{window_s}"]
  allowed: "== 1"
traffic: {rate: 50/s, duration: 1s, identities: 2}
thresholds: [allowed > 0]
`
	path := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	scs, err := scenario.Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	return scs[0]
}

const honestLua = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return 0 end
return 1`

// noteWith is the first note of out holding text, or "".
func noteWith(out *Outcome, text string) string {
	for _, n := range out.Report.Notes {
		if strings.Contains(n, text) {
			return n
		}
	}
	return ""
}

// A script that empties the server, or writes and deletes another
// application's keys, is refused on a Redis rlctl did not start before any
// traffic: exit 2, the message naming the command and the key, and that
// Redis never even gets the script. Every key it held stays byte-identical.
func TestSharedRedisRefusesAScriptThatTouchesMoreThanItsKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	foreign := redistest.SeedForeign(t, c)
	tests := []struct {
		name, lua string
		want      []string
	}{
		{"flushall", `redis.call('FLUSHALL') ` + honestLua, []string{"FLUSHALL (empties every database)"}},
		{"foreign keys", `redis.call('SET', 'app:session:1', 'stolen') redis.call('DEL', 'sidekiq:stat:processed') ` + honestLua,
			[]string{`SET "app:session:1" (writes a key outside its KEYS)`, `DEL "sidekiq:stat:processed" (deletes a key outside its KEYS)`}},
	}
	for _, tt := range tests {
		out, err := Run(context.Background(), scriptScenario(t, tt.lua, srv.URL()), Options{})
		if err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Fatalf("%s: err %v (exit %d), want a refusal with exit 2", tt.name, err, exitcode.Of(err))
		}
		for _, w := range append(tt.want, "refused before any traffic", "--allow-script-writes") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tt.name, err, w)
			}
		}
		if out.Report.Status != score.StatusError || out.Report.ExitCode != int(exitcode.Usage) {
			t.Errorf("%s: report status %s exit %d, want error with exit 2", tt.name, out.Report.Status, out.Report.ExitCode)
		}
	}
	foreign.AssertUnchanged(t, c)
	if n := c.DBSize(context.Background()).Val(); n != int64(len(foreign.Keys())) {
		t.Errorf("Redis holds %d keys, want only the %d seeded", n, len(foreign.Keys()))
	}
	if loaded := c.ScriptExists(context.Background(), sha1Hex(`redis.call('FLUSHALL') `+honestLua)).Val(); slices.Contains(loaded, true) {
		t.Error("the refused script was loaded into the shared Redis")
	}
}

// With --allow-script-writes the same script runs, and the report says
// plainly that rlctl cannot vouch for keys outside the run's namespace,
// never that nothing else was written.
func TestAllowScriptWritesRunsItAndSaysRlctlCannotVouch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	out, err := Run(context.Background(), scriptScenario(t, `redis.call('SET', 'app:mark', 'x') `+honestLua, srv.URL()), Options{AllowScriptWrites: true})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	n := noteWith(out, "cannot vouch")
	if !strings.Contains(n, `SET "app:mark"`) || !strings.Contains(n, "--allow-script-writes") {
		t.Errorf("note %q; want one saying rlctl cannot vouch, naming SET app:mark and the flag", n)
	}
	if n := noteWith(out, "nothing else was written"); n != "" {
		t.Errorf("note %q claims what rlctl cannot know", n)
	}
	if v := srv.Client(t).Get(context.Background(), "app:mark").Val(); v != "x" {
		t.Errorf("app:mark = %q: the script did not run on the given Redis", v)
	}
}

// An honest script runs on a shared Redis as before: its figures are the
// limit's (20 in the one window the run spans), the note says nothing else
// was written or deleted and on what watch that rests, and the other
// application's keys stay byte-identical.
func TestSharedRedisRunsAnHonestScriptAndVouches(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	foreign := redistest.SeedForeign(t, c)
	out, err := Run(context.Background(), scriptScenario(t, honestLua, srv.URL()), Options{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if v := measured(t, out, metric.Allowed); v != 40 {
		t.Errorf("allowed %g, want 40: 20 for each of 2 identities in the one window", v)
	}
	n := noteWith(out, "nothing else was written or deleted")
	if !strings.Contains(n, "calls for 2 identities on a redis-server rlctl started") {
		t.Errorf("note %q; want it to say what the watch ran", n)
	}
	foreign.AssertUnchanged(t, c)
	if n := c.DBSize(context.Background()).Val(); n != int64(len(foreign.Keys())) {
		t.Errorf("Redis holds %d keys, want only the %d seeded", n, len(foreign.Keys()))
	}
}

// A script that never ends is refused on a shared Redis; run anyway, its
// calls time out and rlctl stops each with SCRIPT KILL, so the server
// answers PING after the run, and the report says so. One that wrote before
// looping cannot be killed: the scenario is an error (exit 3) saying so.
// The test's server answers BUSY after 100ms of a script, not 5s.
func TestLoopingScriptOnSharedRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--busy-reply-threshold", "100")
	c := srv.Client(t)
	sc := scriptScenario(t, `while true do end`, srv.URL())
	_, err := Run(context.Background(), sc, Options{})
	if err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "still running after 1s") {
		t.Fatalf("err %v (exit %d), want a refusal naming the call that did not end", err, exitcode.Of(err))
	}
	out, _ := Run(context.Background(), sc, Options{AllowScriptWrites: true})
	if n := noteWith(out, "SCRIPT KILL"); !strings.Contains(n, "stopped each with SCRIPT KILL") {
		t.Errorf("notes %q; want one saying the scripts were killed", out.Report.Notes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("after the run PING answers %v, want PONG", err)
	}

	sc = scriptScenario(t, `redis.call('SET', KEYS[1], 1) while true do end`, srv.URL())
	out, err = Run(context.Background(), sc, Options{AllowScriptWrites: true})
	if err == nil || exitcode.Of(err) != exitcode.Unreachable || out.Report.Status != score.StatusError || !strings.Contains(out.Report.Error, "could not be killed") || !strings.Contains(out.Report.Error, "UNKILLABLE") {
		t.Errorf("err %v (exit %d), report %s %q; want an error with exit 3 saying the script could not be killed", err, exitcode.Of(err), out.Report.Status, out.Report.Error)
	}
	if n := noteWith(out, "could not be killed"); n == "" {
		t.Errorf("notes %q; want one saying the script could not be killed", out.Report.Notes)
	}
	c.ShutdownNoSave(context.Background())
}

func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}
