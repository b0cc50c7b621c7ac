package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redistest"
)

// plantLimiterKeys writes limiter keys that have lost their TTL, so the
// commands below have real work beside the keys they must leave alone.
func plantLimiterKeys(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	for _, err := range []error{
		c.Set(ctx, "rl:fw:{u1}", 3, 0).Err(),
		c.HSet(ctx, "rl:tb:{u2}", "tokens", "4.5", "ts", time.Now().UnixMilli()).Err(),
		c.Set(ctx, "rl:10.0.0.9", 7, 0).Err(), // rate-limit-redis
		c.Set(ctx, "limiter:10.0.0.9", 2, 0).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeysCommandsNeverTouchOtherApplicationsKeys seeds a real Redis with
// another application's keys (under rl:, app: and an unrelated layout) and
// runs every keys command and audit against it with --yes and broad
// patterns, with and without --force: every one of those keys must stay
// byte-identical, its TTL only counting down. Limiter keys are planted too,
// so the commands have something they may change.
func TestKeysCommandsNeverTouchOtherApplicationsKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	foreign := redistest.SeedForeign(t, c)
	plantLimiterKeys(t, c)

	var runs [][]string
	layouts := [][]string{
		{"--limit", "100/1m"},
		{"--ttl", "1m"},
		{"--limit", "100/1m", "--ttl", "1m"},
		{"--schema", "rate-limit-redis", "--ttl", "1m"},
		{"--schema", "redis-fixed-window", "--limit", "100/1m"},
		{"--schema", "redis-token-bucket", "--ttl", "1m"},
		{"--schema", "redis-gcra", "--ttl", "1m"},
		{"--pattern", "rl:{id}", "--ttl", "1m"},
	}
	for _, p := range []string{"*", "[^x]*", "[a-z]*", "*:*", "rl:*", "app:*", "rl:fw:*"} {
		for _, force := range []bool{false, true} {
			for _, l := range layouts {
				args := append([]string{"keys", "repair-ttl", "--match", p, "--yes"}, l...)
				if force {
					args = append(args, "--force")
				}
				runs = append(runs, args)
			}
		}
	}
	for _, l := range layouts {
		runs = append(runs, append([]string{"keys", "repair-ttl", "--yes"}, l...))
		runs = append(runs, append([]string{"keys", "repair-ttl", "--dry-run", "--match", "*"}, l...))
	}
	// Every foreign key by its name, and by what follows each ":" (the
	// identity a layout would read from it).
	ids := map[string]bool{"*": true, "intruder": true, "{intruder}": true}
	for _, k := range foreign.Keys() {
		ids[k] = true
		for i := range k {
			if k[i] == ':' {
				ids[k[i+1:]] = true
			}
		}
	}
	for id := range ids {
		for _, l := range [][]string{nil, {"--schema", "rate-limit-redis"}, {"--pattern", "rl:{id}"}, {"--limit", "100/1m"}} {
			runs = append(runs, append([]string{"keys", "reset", id, "--yes"}, l...))
			runs = append(runs, append([]string{"keys", "reset", id, "--dry-run"}, l...))
			runs = append(runs, append([]string{"keys", "inspect", id}, l...))
		}
	}
	runs = append(runs,
		[]string{"audit", "--refresh-interval", "10ms"},
		[]string{"audit", "--refresh-interval", "10ms", "--limit", "100/1m"},
		[]string{"audit", "--refresh-interval", "10ms", "--schema", "rate-limit-redis", "--limit", "10/1m"},
	)

	for _, args := range runs {
		f, errOut := testFactory(&syncBuffer{}, nil)
		code := Run(f, append(args, "--redis", srv.URL(), "--no-progress"), nil, noExit(t))
		want := []exitcode.Code{exitcode.OK, exitcode.Failed} // inspect and audit find problems
		if slices.Contains(args, "--match") && !slices.Contains(args, "--dry-run") {
			// Every pattern here reaches keys that are not a limiter's: too
			// broad without --force.
			want = []exitcode.Code{exitcode.Usage}
			if slices.Contains(args, "--force") {
				want = []exitcode.Code{exitcode.OK}
			}
		}
		if !slices.Contains(want, exitcode.Code(code)) {
			t.Errorf("rlctl %s: exit %d, want one of %v: %s", strings.Join(args, " "), code, want, errOut)
		}
		foreign.AssertUnchanged(t, c)
		if t.Failed() {
			t.Fatalf("after rlctl %s (exit %d): other applications' keys changed; stderr: %s", strings.Join(args, " "), code, errOut)
		}
	}
}

// runJSON runs rlctl with -o json against url and decodes its output.
func runJSON(t *testing.T, url string, args ...string) (int, map[string]any, string) {
	t.Helper()
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	code := Run(f, append(args, "--redis", url, "-o", "json", "--no-progress"), nil, noExit(t))
	var m map[string]any
	if s := out.String(); s != "" {
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("rlctl %s: %v: %q", strings.Join(args, " "), err, s)
		}
	}
	return code, m, errOut.String()
}

// TestKeysResetLeavesKeysThatAreNotALimiters: an exact key or an identity
// whose keys are named like limiter keys but hold something else is not
// deleted, and the output says which were left alone.
func TestKeysResetLeavesKeysThatAreNotALimiters(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	foreign := redistest.SeedForeign(t, c)
	if err := c.Set(ctx, "rl:gi:{intruder}", 5, 0).Err(); err != nil { // a real counter of intruder
		t.Fatal(err)
	}
	for _, tt := range []struct {
		arg       string
		deleted   float64
		leftAlone string
	}{
		{"rl:fw:notlimiter", 0, "rl:fw:notlimiter"},
		{"fw:notlimiter", 0, "rl:fw:notlimiter"},
		{"rl:sessions:abc", 0, "rl:sessions:abc"},
		{"intruder", 1, "rl:fw:{intruder}"},
	} {
		code, res, errOut := runJSON(t, srv.URL(), "keys", "reset", tt.arg, "--yes")
		if code != 0 {
			t.Fatalf("reset %s: exit %d: %s", tt.arg, code, errOut)
		}
		left, _ := res["left_alone"].([]any)
		if res["deleted"] != tt.deleted || !slices.Contains(left, any(tt.leftAlone)) {
			t.Errorf("reset %s: %v; want %v deleted and %s left alone", tt.arg, res, tt.deleted, tt.leftAlone)
		}
	}
	if c.Exists(ctx, "rl:gi:{intruder}").Val() != 0 {
		t.Error("intruder's real counter not deleted")
	}
	foreign.AssertUnchanged(t, c)
}
