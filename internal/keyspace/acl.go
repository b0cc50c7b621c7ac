package keyspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/textfmt"
)

// IsNoPerm reports whether err is Redis refusing a command or a key to
// the connected ACL user (NOPERM), directly or from inside a script. An
// ACL user limited to some keys (~rl:*) still sees every key in SCAN, so
// a page script over the keys it found is refused whole.
func IsNoPerm(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "NOPERM") || strings.Contains(msg, "can't access at least one of the keys")
}

// denied keeps the keys the connected user may not access: a count and a
// bounded sample. It is not safe for concurrent use.
type denied struct {
	count  int64
	sample []string
}

const deniedSample = 10

func (d *denied) add(keys ...string) {
	for _, k := range keys {
		d.count++
		if len(d.sample) < deniedSample {
			d.sample = append(d.sample, k)
		}
	}
}

// err is a PermissionError for what, or nil when no key was denied.
func (d *denied) err(what string, write bool) error {
	if d.count == 0 {
		return nil
	}
	return &PermissionError{What: what, Count: d.count, Sample: d.sample, Write: write}
}

// PermissionError says which keys the connected ACL user may not access
// (NOPERM): the command did what the ACL allows and left them out. It
// carries exitcode.Unreachable: part of Redis could not be reached.
type PermissionError struct {
	// What is the command that left keys out ("inspect", "repair-ttl").
	What string
	// Count is how many keys were left out; Sample names some of them.
	Count  int64
	Sample []string
	// Write is set when the command needed to change the keys, not only
	// read them.
	Write bool
}

func (e *PermissionError) Error() string {
	perm, grant := "read", "%R~"
	if e.Write {
		perm, grant = "write", "~"
	}
	return fmt.Sprintf("%s: the Redis user has no permission to %s %s (NOPERM), left out: %s; grant it with an ACL key pattern (%s<prefix>*), or narrow the command with --schema to the layouts it may %s",
		e.What, perm, textfmt.Count(e.Count, "key"), strings.Join(e.Sample, ", "), grant, perm)
}

// ExitCode is exitcode.Unreachable.
func (e *PermissionError) ExitCode() exitcode.Code { return exitcode.Unreachable }

// splitReadable sorts keys into those the connected user may read and
// those it may not, with one pipelined PTTL per key: each key is checked
// against the user's ACL on its own, where one script over all of them is
// refused for the first it may not touch.
func splitReadable(ctx context.Context, n Node, keys []string) (ok, no []string, err error) {
	pipe := n.Client.Pipeline()
	for _, k := range keys {
		pipe.PTTL(ctx, k)
	}
	cmds, _ := pipe.Exec(ctx)
	if len(cmds) != len(keys) {
		return nil, nil, fmt.Errorf("check access on %s: %d answers for %d keys", n.Addr, len(cmds), len(keys))
	}
	for i, cmd := range cmds {
		switch err := cmd.Err(); {
		case IsNoPerm(err):
			no = append(no, keys[i])
		case err != nil:
			return nil, nil, fmt.Errorf("check access on %s: %w", n.Addr, err)
		default:
			ok = append(ok, keys[i])
		}
	}
	return ok, no, nil
}
