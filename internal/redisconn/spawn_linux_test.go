package redisconn_test

// Guarantees only Linux gives: a parent-death signal, and thread ids.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestSpawnDiesWithParent: servers must not outlive rlctl, whether it is
// killed outright (the kernel's parent-death signal) or interrupted (the
// context cancels and Close runs).
func TestSpawnDiesWithParent(t *testing.T) {
	redistest.Binary(t)
	for _, tc := range []struct {
		spec string // "" for a replica and a Sentinel; else an Open spec
		pids int
	}{{"", 3}, {redisconn.SpecSpawnSentinel, 5}, {redisconn.SpecSpawnCluster, 6}} {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
			t.Run(tc.spec+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				dieWithParent(t, tc.spec, tc.pids, sig)
			})
		}
	}
}

// dieWithParent runs the test binary as a child that starts spec, sends it
// sig once everything runs, and checks that every process it started is
// gone (none left in /proc, no port answering) and its directory, which
// held the credentials, too: after an interrupt at once, after a SIGKILL
// within a second (the parent-death signal and the directory's reaper),
// with room for a loaded machine.
func dieWithParent(t *testing.T, spec string, want int, sig syscall.Signal) {
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpawnChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+spec, "RLCTL_SPAWN_TEST_DIR="+tmp, "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids []int
	var addrs []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "ADDRS "); ok {
			addrs = strings.Fields(rest)
			continue
		}
		if rest, ok := strings.CutPrefix(line, "PIDS "); ok {
			for _, f := range strings.Fields(rest) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
			break
		}
		if strings.HasPrefix(line, "ERR") {
			t.Fatalf("child: %s", line)
		}
	}
	if len(pids) != want {
		t.Fatalf("child reported pids %v, want %d", pids, want)
	}
	for _, pid := range pids {
		if !redistest.Alive(pid) {
			t.Fatalf("pid %d not running before the signal", pid)
		}
	}
	if len(addrs) != want {
		t.Fatalf("child reported addresses %v, want %d", addrs, want)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = bufio.NewReader(out).WriteTo(new(strings.Builder)) }()
	_ = cmd.Wait()
	deadline := time.Now().Add(1500 * time.Millisecond)
	within := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s after %s of the parent: not within a second", what, sig)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, pid := range pids {
		within(fmt.Sprintf("pid %d still running", pid), func() bool { return !redistest.Alive(pid) })
	}
	for _, addr := range addrs {
		within(addr+" still answers", func() bool {
			c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err != nil
		})
	}
	within("the deployment's directory still there", func() bool {
		left, _ := filepath.Glob(filepath.Join(tmp, "rlctl-redis-*"))
		return len(left) == 0
	})
}

// TestSpawnSweepsOnlyTheDead: the sweep of dead rlctls' directories
// removes one whose owner file nobody holds, and leaves a running
// deployment's alone (its servers keep answering), and any directory
// without an owner file, whatever its name.
func TestSpawnSweepsOnlyTheDead(t *testing.T) {
	redistest.Binary(t)
	t.Parallel()
	tmp := t.TempDir()
	live, err := redisconn.Spawn(context.Background(), redisconn.SpawnOptions{Dir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	foreign := filepath.Join(tmp, "rlctl-redis-not-ours")
	if err := os.MkdirAll(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	// What an rlctl whose reaper could not start leaves when killed: an
	// owner file nobody holds.
	dead := filepath.Join(tmp, "rlctl-redis-dead")
	if err := os.MkdirAll(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, "owner.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := redisconn.Spawn(context.Background(), redisconn.SpawnOptions{Dir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	for _, dir := range []string{live.Dir, foreign} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s swept: %v", dir, err)
		}
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead rlctl's %s was not swept: %v", dead, err)
	}
	c := redis.NewClient(&redis.Options{Addr: live.Servers[0].Addr})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Errorf("the live deployment stopped answering: %v", err)
	}
}

// TestSpawnFailureLeavesNothing: a topology whose start fails half-way
// (here: out of time while the Cluster's replicas join) stops every process
// it had started; none is found in /proc afterwards.
func TestSpawnFailureLeavesNothing(t *testing.T) {
	redistest.Binary(t)
	t.Parallel()
	dir := t.TempDir()
	_, err := redisconn.Spawn(context.Background(), redisconn.SpawnOptions{Cluster: true, ClusterReplicas: 1, Dir: dir, StartTimeout: 300 * time.Millisecond})
	if err == nil {
		t.Skip("the Cluster started within 300ms: nothing failed to clean up after")
	}
	waitFor(t, "no process of the failed start left", func() bool { return len(procsUnder(t, dir)) == 0 })
}

// procsUnder lists the pids whose command line names a path under dir:
// every server and Sentinel Spawn starts in dir has its config there.
func procsUnder(t *testing.T, dir string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), dir) && redistest.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestSpawnSurvivesSpawningThreadExit: the parent-death signal follows the
// forking thread; a server spawned from a goroutine whose locked thread
// then exits must keep running.
func TestSpawnSurvivesSpawningThreadExit(t *testing.T) {
	t.Parallel()
	redistest.Binary(t)
	var d *redisconn.Deployment
	var err error
	tid := onThrowawayThread(func() {
		d, err = redisconn.Spawn(context.Background(), redisconn.SpawnOptions{Dir: t.TempDir()})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitFor(t, fmt.Sprintf("thread %d to exit", tid), func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid))
		return errors.Is(err, os.ErrNotExist)
	})
	c := redis.NewClient(&redis.Options{Addr: d.Servers[0].Addr, MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("server died with the thread that spawned it: %v", err)
	}
}

// onThrowawayThread runs f on an OS thread that ends right after (a
// goroutine that exits while locked takes its thread with it) and returns
// that thread's id. The main thread is never ended, so it is skipped.
func onThrowawayThread(f func()) int {
	tidc := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		if syscall.Gettid() == syscall.Getpid() {
			tidc <- onThrowawayThread(f)
			runtime.UnlockOSThread()
			return
		}
		f()
		tidc <- syscall.Gettid()
	}()
	return <-tidc
}
