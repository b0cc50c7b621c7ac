//go:build unix

package redisconn

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// reaperEnv names, in the environment of the process startReaper starts,
// the spawn directory that process is to remove.
const reaperEnv = "RLCTL_SPAWN_REAPER"

// A process started with reaperEnv set is a reaper and nothing else: it
// removes its directory and exits before main runs. This is the one place
// below the command line that ends the process, since a reaper has no
// command to run.
func init() {
	if dir, ok := os.LookupEnv(reaperEnv); ok {
		reap(dir)
		os.Exit(0)
	}
}

// startReaper starts a process that removes dir (a spawn directory, its
// owner lock held) as soon as the lock is let go: right after Close, or
// the moment rlctl is killed outright, when the kernel drops it. Without
// it, an rlctl killed by SIGKILL leaves dir, and the credentials in it,
// until the next Spawn sweeps it. The reaper is this same executable,
// started with reaperEnv set (see init); it leads its own process group,
// so a Ctrl-C on the terminal leaves it to finish, has no parent-death
// signal, so it outlives rlctl, and holds none of rlctl's descriptors. A
// reaper that cannot start leaves dir to the sweep, as before.
func startReaper(dir string) {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), reaperEnv+"="+dir)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Start() != nil {
		return
	}
	go func() { _ = cmd.Wait() }() // after a Close it exits at once
}

// reap waits until nobody holds dir's owner lock, then until the servers
// whose pid files are in dir are gone (at most a second: on Linux they
// die with rlctl, elsewhere the reaper kills them), and removes dir. Only
// a spawn directory with an owner file is touched.
func reap(dir string) {
	if !strings.HasPrefix(filepath.Base(dir), spawnDirPrefix) {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_RDWR, 0)
	if err != nil {
		return // gone already: Close removed it
	}
	defer f.Close()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
	pids := pidsIn(dir)
	if !parentDeathSignal {
		for _, pid := range pids {
			killGroup(pid)
		}
	}
	deadline := time.Now().Add(time.Second)
	for _, pid := range pids {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	_ = os.RemoveAll(dir)
}

// running reports whether pid is a process that has not exited: a zombie
// (dead, waiting for a parent that may be slow to reap it) has.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc to tell a zombie by
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// pidsIn reads the pid files of the processes spawned in dir (one level
// down: dir/<name>/redis.pid).
func pidsIn(dir string) []int {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "redis.pid"))
	var pids []int
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			pids = append(pids, pid)
		}
	}
	return pids
}
