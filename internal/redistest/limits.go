package redistest

import (
	"context"
	"strings"
	"testing"
)

// FillPastMaxmemory puts s out of memory, as a Redis under memory
// pressure with maxmemory-policy noeviction is: one 2 MiB value, then
// maxmemory 1mb. From then on Redis refuses every write (OOM) and answers
// everything else. It is for servers the test started.
func FillPastMaxmemory(t testing.TB, s *Server) {
	t.Helper()
	c := s.Client(t)
	ctx := context.Background()
	for _, step := range [][]any{
		{"SET", "redistest:ballast", strings.Repeat("x", 2<<20)},
		{"CONFIG", "SET", "maxmemory-policy", "noeviction"},
		{"CONFIG", "SET", "maxmemory", "1mb"},
	} {
		if err := c.Do(ctx, step...).Err(); err != nil {
			t.Fatalf("%v: %v", step[:2], err)
		}
	}
	if err := c.Set(ctx, "redistest:probe", "1", 0).Err(); err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("a write after maxmemory 1mb answered %v, want OOM", err)
	}
}

// RestrictedUser adds an ACL user to s (a server the test started) with
// the given rules after "on" and its password, e.g. "~rl:*", "+@all" for
// one that may use every command on keys under rl: only, and returns its
// name and password.
func RestrictedUser(t testing.TB, s *Server, name string, rules ...string) (user, password string) {
	t.Helper()
	password = "pw-" + randHex(t, 8)
	args := []any{"ACL", "SETUSER", name, "reset", "on", ">" + password}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := s.Client(t).Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER %s: %v", name, err)
	}
	return name, password
}
