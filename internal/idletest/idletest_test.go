package idletest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// On Linux with chrt (Debian's util-linux), the program runs under
// SCHED_IDLE, and the command's exit status is the program's own.
func TestCommandRunsAtIdlePriority(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SCHED_IDLE is Linux's")
	}
	if _, err := exec.LookPath("chrt"); err != nil {
		t.Fatalf("no chrt on the PATH (util-linux): %v", err)
	}
	out, err := Command("cat", "/proc/self/stat").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's name, in parentheses, start at the
	// third; the scheduling policy is the 41st (SCHED_IDLE is 5).
	s := string(out)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if policy := fields[41-3]; policy != "5" {
		t.Errorf("scheduling policy %s, want 5 (SCHED_IDLE): %s", policy, s)
	}
	err = Command("sh", "-c", "exit 3").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("exit status %v, want the program's 3", err)
	}
}

// Builds started at once run one after another: each makes a directory
// only one may hold, and would fail finding it there.
func TestBuildsTakeTurns(t *testing.T) {
	busy := filepath.Join(t.TempDir(), "busy")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	outs := make([][]byte, 4)
	for i := range errs {
		wg.Go(func() {
			outs[i], errs[i] = Build(exec.Command("sh", "-c", `mkdir "$0" && sleep 0.05 && rmdir "$0"`, busy))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("build %d ran beside another: %v\n%s", i, err, outs[i])
		}
	}
	if _, err := os.Stat(busy); !os.IsNotExist(err) {
		t.Errorf("the last build did not finish: %v", err)
	}
}
