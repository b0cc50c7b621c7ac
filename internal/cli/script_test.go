package cli_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rlctl/rlctl/internal/cli"
)

// TestMain lets testscript run the test binary itself, race-built, as the
// rlctl command: the tests that start rlctl processes of their own
// (segments) run it from the PATH. It is the only TestMain of package
// cli's tests.
func TestMain(m *testing.M) {
	testscript.Main(removingUserBinary{m}, map[string]func(){
		"rlctl": func() { os.Exit(cli.Main()) },
	})
}

// removingUserBinary runs the tests, then removes the binary the scripts
// ran (cli.UserBinary).
type removingUserBinary struct{ m *testing.M }

func (r removingUserBinary) Run() int {
	defer cli.RemoveUserBinary()
	return r.m.Run()
}

// TestScript runs every testdata/script/*.txtar end to end. Besides the
// standard commands, scripts have redis-server, redis-cluster,
// redis-sentinel and redis-cli-cmd (see scriptCmds) and
// exit-code.
//
// The scripts' rlctl is the binary users run, built as the Dockerfile
// builds it, without the race detector: the scripts check what a user
// sees of it (output, files, exit codes). The code behind each command
// is raced in this package's own tests, which run the commands in
// process (signals too), and in the packages beneath. Race-built, the
// start of each rlctl process alone was most of the scripts' CPU.
func TestScript(t *testing.T) {
	t.Parallel()
	bin := cli.UserBinary(t)
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
			env.Setenv("PATH", filepath.Dir(bin)+string(filepath.ListSeparator)+env.Getenv("PATH"))
			return nil
		},
	})
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
