package scripttarget

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

// watch runs Watch with the templates a run of "rl:{id}" on a shared
// Redis would send, on the embedded Redis when embedded is set.
func watch(t *testing.T, script string, embedded bool) *Watched {
	t.Helper()
	if !embedded {
		redistest.Binary(t) // a missing redis-server fails, never falls back
	}
	w, err := Watch(context.Background(), WatchOptions{
		Source: script, Keys: []string{"rl:rlctl-0a1b2c3d:{id}", "rl:rlctl-0a1b2c3d:{id}:seen"},
		Args:  []string{"{limit}", "{window_ms}", "{now_ms}"},
		Limit: rate.Limit{Count: 5, Window: time.Second}, Identities: []string{"user-0", "user-1", "user-2", "user-3"},
		Gateways: 2, Timeout: 50 * time.Millisecond, Embedded: embedded,
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// What a script does beyond its KEYS, watched on a real redis-server and
// on the embedded Redis a user without one gets: every server-wide command
// and every key written or deleted outside the call's KEYS is a finding
// naming the command and the key; an honest limiter has none. A command
// that only runs past the limit is seen, since the watch calls each
// identity past it.
func TestWatchFindsWhatAScriptTouches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script string
		want         []Finding // nil: clean
		embeddedWant []Finding // when the embedded Redis says it otherwise
	}{
		{name: "honest fixed window", script: fixedWindowLua},
		{name: "both its keys", script: `redis.call('SADD', KEYS[2], ARGV[3]) return redis.call('INCR', KEYS[1]) <= tonumber(ARGV[1]) and 1 or 0`},
		{name: "flushall", script: `redis.call('FLUSHALL') return 1`,
			want: []Finding{{Command: "FLUSHALL", What: "empties every database"}}},
		{name: "flushdb via pcall", script: `redis.pcall('FLUSHDB', 'ASYNC') return 1`,
			want: []Finding{{Command: "FLUSHDB", What: "empties the whole database"}}},
		{name: "foreign keys", script: `redis.call('SET', 'app:session:1', 'x') redis.call('DEL', 'sidekiq:stat:processed') return redis.call('INCR', KEYS[1])`,
			want: []Finding{
				{Command: "SET", Key: "app:session:1", What: "writes a key outside its KEYS"},
				{Command: "DEL", Key: "sidekiq:stat:processed", What: "deletes a key outside its KEYS"},
			}},
		{name: "past the limit only", script: `if redis.call('INCR', KEYS[1]) > tonumber(ARGV[1]) then redis.call('EXPIRE', 'app:user:7', 1) end return 1`,
			want: []Finding{{Command: "EXPIRE", Key: "app:user:7", What: "writes a key outside its KEYS"}}},
		{name: "another database", script: `redis.call('SELECT', 1) redis.call('SET', KEYS[1], 1) return 1`,
			want: []Finding{{Command: "SELECT", What: "switches to another database, outside the run's namespace"}, {Command: "SET", What: "ran in database 1, outside the run's namespace"}},
			// The embedded Redis does not say which database a command ran in.
			embeddedWant: []Finding{{Command: "SELECT", What: "switches to another database, outside the run's namespace"}}},
		{name: "publish", script: `redis.call('PUBLISH', 'app:events', 'hi') return 1`,
			want: []Finding{{Command: "PUBLISH", What: "sends a message to the server's subscribers"}}},
	}
	for _, embedded := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name
			want := tt.want
			if embedded {
				name += " (embedded)"
				if tt.embeddedWant != nil {
					want = tt.embeddedWant
				}
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				w := watch(t, tt.script, embedded)
				if !slices.Equal(w.Findings, want) {
					t.Fatalf("findings %q, want %q", w.Describe(10), (&Watched{Findings: want}).Describe(10))
				}
				if w.Failed != 0 {
					t.Fatalf("%d calls failed: %s", w.Failed, w.FirstError)
				}
				if w.Clean() != (want == nil) {
					t.Fatalf("Clean() = %v with findings %q", w.Clean(), w.Describe(10))
				}
				// 3 identities, each 5+1 calls in one window and one in each
				// of the next two.
				if w.Calls != 24 || w.Identities != 3 {
					t.Fatalf("%s; want 24 calls for 3 identities", w.Coverage())
				}
				server := "redis-server"
				if embedded {
					server = "embedded"
				}
				if !strings.Contains(w.Server, server) {
					t.Fatalf("watched on %q, want %s", w.Server, server)
				}
			})
		}
	}
}

// A key the script only reads outside its KEYS is no finding, but the
// watch names it; a script that fails is not clean; one that never ends
// is stopped and is a finding.
func TestWatchReadsErrorsAndLoops(t *testing.T) {
	t.Parallel()
	for _, embedded := range []bool{false, true} {
		w := watch(t, `local cfg = redis.call('GET', 'app:config:limit') return redis.call('INCR', KEYS[1]) <= tonumber(ARGV[1]) and 1 or 0`, embedded)
		if len(w.Findings) != 0 || !slices.Equal(w.Reads, []string{"app:config:limit"}) || !w.Clean() {
			t.Errorf("embedded %v: findings %q, reads %q; want only the read", embedded, w.Describe(5), w.Reads)
		}
		w = watch(t, `return redis.call('INCR', KEYS[1], 'extra')`, embedded)
		if w.Failed != w.Calls || w.FirstError == "" || w.Clean() {
			t.Errorf("embedded %v: %d of %d calls failed (%q), clean %v; want every call failed, not clean", embedded, w.Failed, w.Calls, w.FirstError, w.Clean())
		}
	}
	// Only on redis-server: a script spinning in the embedded Redis holds
	// its lock until the process ends.
	w := watch(t, `while true do end`, false)
	if len(w.Findings) != 1 || !strings.Contains(w.Findings[0].What, "still running after 1s") || w.Clean() {
		t.Fatalf("findings %q; want the call that did not end", w.Describe(5))
	}
	if w.Calls != 1 {
		t.Fatalf("%d calls; the watch should stop at the first that did not end", w.Calls)
	}
}

func TestParseMonitorLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line   string
		db     int
		source string
		args   []string
		ok     bool
	}{
		{`+1796165043.065240 [0 lua] "set" "a\"b\n" "1"`, 0, "lua", []string{"set", "a\"b\n", "1"}, true},
		{`1796165043.097792 [1 lua] "del" "bin:\x00\xff" "sp ace" "back\\slash"`, 1, "lua", []string{"del", "bin:\x00\xff", "sp ace", `back\slash`}, true},
		{`1796165043.105926 [0 127.0.0.1:59046] "echo" "done"`, 0, "127.0.0.1:59046", []string{"echo", "done"}, true},
		{`1796165043.1 [0 unix:/tmp/r.sock] "ping"`, 0, "unix:/tmp/r.sock", []string{"ping"}, true},
		{`1796165043.1 [0 lua] "unterminated`, 0, "", nil, false},
		{`1796165043.1 [0 lua] "bad\x4"`, 0, "", nil, false},
		{`+OK`, 0, "", nil, false},
		{`1796165043.1 [x lua] "get"`, 0, "", nil, false},
	}
	for _, tt := range tests {
		db, source, args, ok := parseMonitorLine(tt.line)
		if ok != tt.ok || (ok && (db != tt.db || source != tt.source || !slices.Equal(args, tt.args))) {
			t.Errorf("parseMonitorLine(%q) = %d, %q, %q, %v; want %d, %q, %q, %v", tt.line, db, source, args, ok, tt.db, tt.source, tt.args, tt.ok)
		}
	}
}

func FuzzParseMonitorLine(f *testing.F) {
	f.Add(`1796165043.065240 [0 lua] "set" "a\"b\n" "1"`)
	f.Add(`1 [0 lua] "\x0`)
	f.Fuzz(func(t *testing.T, line string) {
		parseMonitorLine(line) // never panics
	})
}
