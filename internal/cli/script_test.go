package cli_test

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rlctl/rlctl/internal/cli"
)

// TestMain lets testscript run the test binary itself as the rlctl
// command. It is the only TestMain of package cli's tests.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"rlctl": func() { os.Exit(cli.Main()) },
	})
}

// TestScript runs every testdata/script/*.txtar end to end. Besides the
// standard commands, scripts have redis-server, redis-cluster,
// redis-sentinel and redis-cli-cmd (see scriptCmds) and
// exit-code.
func TestScript(t *testing.T) {
	t.Parallel()
	cmds := scriptCmds()
	cmds["exit-code"] = cmdExitCode
	testscript.Run(t, testscript.Params{
		Dir:  "testdata/script",
		Cmds: cmds,
		Setup: func(env *testscript.Env) error {
			// A developer's own settings must not leak into the scripts.
			for _, k := range []string{"RLCTL_REDIS_URL", "REDIS_URL", "REDISCLI_AUTH"} {
				env.Setenv(k, "")
			}
			env.Setenv("GORACE", scriptGORACE(os.Getenv("GORACE")))
			return nil
		},
	})
}

// scriptGORACE is the race detector's options for the rlctl processes a
// script runs (testscript gives them an environment of its own): the
// test's own, and no sleep at exit. A race-enabled binary that exits 0
// sleeps atexit_sleep_ms (1s by default) so that other threads can still
// report a race; every exec in a script paid that second, about 150s of
// the scripts' time. A race found is still reported, and still makes the
// process exit 66. An atexit_sleep_ms in GORACE is kept.
func scriptGORACE(own string) string {
	if strings.Contains(own, "atexit_sleep_ms") {
		return own
	}
	return strings.TrimSpace(own + " atexit_sleep_ms=0")
}

// cmdExitCode runs a program and fails unless it exits with the given
// status; its stdout and stderr are then checked with stdout/stderr.
//
//	exit-code CODE PROG [ARGS...]
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exit-code CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exit-code: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exit-code: run %s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}
