package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestKeysCommandsUnderARestrictedUser: a Redis user limited to ~rl:*
// gets, from inspect, reset, repair-ttl and audit, what its ACL allows
// (ann's rl: key shown, reset, bob's repaired), and exit 3 naming the key
// it may not read and the permission, never a whole-command failure
// (exit 1) or its password.
func TestKeysCommandsUnderARestrictedUser(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	for k, ttl := range map[string]time.Duration{"rl:fw:{ann}": time.Minute, "rl:fw:{bob}": 0, "rate:ann": time.Minute} {
		if err := admin.Set(ctx, k, 7, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	user, pw := redistest.RestrictedUser(t, srv, "limited", "~rl:*", "+@all")
	env := map[string]string{"REDISCLI_AUTH": pw}
	url := "redis://" + user + "@" + srv.Addr
	for _, tc := range []struct {
		args []string
		out  string
	}{
		{[]string{"keys", "inspect", "ann", "--limit", "10/1m"}, "rl:fw:{ann}"},
		{[]string{"keys", "reset", "ann", "--limit", "10/1m", "--yes"}, "deleted 1 key"},
		{[]string{"keys", "repair-ttl", "--limit", "10/1m", "--yes"}, "1 repaired"},
		{[]string{"audit", "--limit", "10/1m"}, "limiter-keys"},
	} {
		out := &syncBuffer{}
		f, errOut := testFactory(out, env)
		code := Run(f, append(tc.args, "--redis", url), nil, noExit(t))
		msg := errOut.String()
		if code != int(exitcode.Unreachable) || !strings.Contains(msg, "no permission to read 1 key (NOPERM), left out: rate:ann") || strings.Contains(msg+out.String(), pw) {
			t.Errorf("%v: exit %d, stderr %q; want exit 3 naming rate:ann and the read permission", tc.args, code, msg)
		}
		if !strings.Contains(out.String(), tc.out) {
			t.Errorf("%v: stdout %q, want %q: what the ACL allows is done", tc.args, out, tc.out)
		}
	}
	if admin.Exists(ctx, "rl:fw:{ann}").Val() != 0 || admin.PTTL(ctx, "rl:fw:{bob}").Val() <= 0 || admin.Exists(ctx, "rate:ann").Val() != 1 {
		t.Error("want ann's rl: key reset, bob's repaired and rate:ann untouched")
	}
}
