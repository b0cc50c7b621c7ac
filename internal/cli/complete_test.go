package cli

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/report"
)

// complete runs `rlctl __complete ARGS...` as a shell's completion script
// does and returns the values offered (the last line is the directive).
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	if code := Run(f, append([]string{"__complete"}, args...), nil, noExit(t)); code != 0 {
		t.Fatalf("__complete %q exited %d: %s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
		t.Fatalf("__complete %q: no directive line in %q", args, out)
	}
	return lines[:len(lines)-1]
}

// TestFlagValuesComplete: flags with a fixed list of values complete from
// that list, in every command that has them.
func TestFlagValuesComplete(t *testing.T) {
	schemas := keyspace.NewRegistry(keyspace.Params{}).Names()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"ceiling", "--algorithm", ""}, design.Names()},
		{[]string{"gateway", "serve", "--algorithm", ""}, design.Names()},
		{[]string{"audit", "--algorithm", "redis-s"}, []string{"redis-sliding-window", "redis-sliding-log"}},
		{[]string{"verify", "--format", ""}, report.AllFormats},
		{[]string{"report", "render", "--format", ""}, report.AllFormats},
		{[]string{"verify", "--format", "json,"}, []string{"json,md", "json,junit", "json,html"}},
		{[]string{"keys", "inspect", "--schema", ""}, schemas},
		{[]string{"keys", "repair-ttl", "--schema", "redis-fixed"}, []string{"redis-fixed-window", "redis-fixed-window-refresh"}},
		{[]string{"audit", "--schema", ""}, schemas},
		{[]string{"ping", "-o", ""}, []string{"table", "json"}},
		{[]string{"gateway", "serve", "--on-error", ""}, []string{"open", "closed", "local"}},
		{[]string{"gateway", "serve", "--ratelimit-fields", ""}, []string{"draft-11", "draft-06"}},
		{[]string{"keys", "inspect", "--type", ""}, []string{"string", "hash", "zset"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := complete(t, tt.args...)
			if !slices.Equal(got, tt.want) {
				t.Errorf("offered %q, want %q", got, tt.want)
			}
		})
	}
	if len(schemas) < 10 {
		t.Errorf("only %d schemas: %q", len(schemas), schemas)
	}
}

// TestFlagValuesRegistered: every name in flagValues is a flag of some
// command, so no entry is dead.
func TestFlagValuesRegistered(t *testing.T) {
	f, _ := testFactory(io.Discard, nil)
	root := NewRootCmd(f)
	for name := range flagValues {
		found := root.PersistentFlags().Lookup(name) != nil
		for _, c := range allCommands(root) {
			found = found || c.Flags().Lookup(name) != nil
		}
		if !found {
			t.Errorf("flagValues names --%s, which no command has", name)
		}
	}
}

// TestJSONErrorIsAnObject: with -o json, stdout holds exactly one JSON
// object for an error, with its message and exit code.
func TestJSONErrorIsAnObject(t *testing.T) {
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	code := Run(f, []string{"-o", "json", "ceiling", "--limit", "100/fortnight"}, nil, noExit(t))
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	var got map[string]any
	dec := json.NewDecoder(strings.NewReader(out.String()))
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if dec.More() {
		t.Errorf("stdout holds more than one JSON value: %s", out)
	}
	if got["exit_code"] != float64(2) || !strings.Contains(got["error"].(string), "--limit") || len(got) != 2 {
		t.Errorf("stdout = %v", got)
	}
	if !strings.HasPrefix(errOut.String(), "rlctl: ") || strings.Contains(errOut.String(), "{") {
		t.Errorf("stderr = %q, want the plain line", errOut)
	}
}

// allCommands is c and every command below it.
func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, s := range c.Commands() {
		out = append(out, allCommands(s)...)
	}
	return out
}
