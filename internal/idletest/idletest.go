package idletest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Command is exec.Command for name and args, run at idle CPU priority
// where the system offers one: chrt --idle on Linux (a task every other
// one preempts at once), else nice 19, else as it is. Both exec the
// program in their own place, so the command's process, exit status and
// resource usage are the program's.
func Command(name string, arg ...string) *exec.Cmd {
	if runtime.GOOS == "linux" {
		if chrt, err := exec.LookPath("chrt"); err == nil {
			return exec.Command(chrt, append([]string{"--idle", "0", name}, arg...)...)
		}
	}
	if runtime.GOOS != "windows" {
		if nice, err := exec.LookPath("nice"); err == nil {
			return exec.Command(nice, append([]string{"-n", "19", name}, arg...)...)
		}
	}
	return exec.Command(name, arg...)
}

// Go is Command for the go command (the one in GOROOT when none is on the
// PATH).
func Go(arg ...string) *exec.Cmd {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	return Command(gobin, arg...)
}

// Build runs cmd, a build made with Go, and returns its combined output.
// It runs once every other Build on this machine, in any test binary, has
// finished: they take turns on a lock file in the user's cache directory.
func Build(cmd *exec.Cmd) ([]byte, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("a directory for the build lock: %w", err)
	}
	dir := filepath.Join(cache, "rlctl-test")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	unlock, err := lock(filepath.Join(dir, "build.lock"))
	if err != nil {
		return nil, fmt.Errorf("the build lock: %w", err)
	}
	defer unlock()
	return cmd.CombinedOutput()
}
