package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

func TestSpawnReplicasPromoteKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := redistest.Spawn(t, redisconn.SpawnOptions{Replicas: 2})
	if len(d.Servers) != 3 || d.Mode() != redisconn.ModeStandalone {
		t.Fatalf("servers = %d, mode %s", len(d.Servers), d.Mode())
	}
	primary := redis.NewClient(&redis.Options{Addr: d.Servers[0].Addr})
	defer primary.Close()
	if err := primary.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Both replicas are in sync and see the write.
	for i := 1; i <= 2; i++ {
		r := redis.NewClient(&redis.Options{Addr: d.Servers[i].Addr})
		defer r.Close()
		waitFor(t, fmt.Sprintf("replica %d sees k", i), func() bool { return r.Get(ctx, "k").Val() == "v" })
	}

	if err := d.Kill(0); err != nil {
		t.Fatal(err)
	}
	if d.Servers[0].Alive() {
		t.Error("primary alive after Kill")
	}
	if err := d.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if d.Primary() != 1 || d.URL() != d.ServerURL(1) {
		t.Errorf("Primary() = %d, URL %s", d.Primary(), d.URL())
	}
	np := redis.NewClient(&redis.Options{Addr: d.Servers[1].Addr})
	defer np.Close()
	if err := np.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("write to promoted replica: %v", err)
	}
	other := redis.NewClient(&redis.Options{Addr: d.Servers[2].Addr})
	defer other.Close()
	waitFor(t, "other replica follows the new primary", func() bool { return other.Get(ctx, "after").Val() == "1" })
	if err := d.Promote(ctx, 1); err == nil {
		t.Error("promoting the primary succeeded")
	}
}

func TestSpawnSentinelFailover(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := redistest.Spawn(t, redisconn.SpawnOptions{Replicas: 1, Sentinels: 1})
	if d.Mode() != redisconn.ModeSentinel || !strings.HasPrefix(d.URL(), "redis+sentinel://") {
		t.Fatalf("mode %s, URL %s", d.Mode(), d.URL())
	}
	s := redis.NewSentinelClient(&redis.Options{Addr: d.Sentinels[0].Addr})
	defer s.Close()
	// Sentinel learns replicas from the primary's INFO; wait until it has.
	waitFor(t, "sentinel knows the replica", func() bool {
		r, err := s.Replicas(ctx, d.MasterName).Result()
		return err == nil && len(r) == 1
	})
	addr, err := d.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if addr != d.Servers[1].Addr || d.Primary() != 1 {
		t.Errorf("new primary %s (index %d), want the replica %s", addr, d.Primary(), d.Servers[1].Addr)
	}
}

func TestSpawnRejectsBadOptions(t *testing.T) {
	for _, o := range []redisconn.SpawnOptions{
		{Cluster: true, Replicas: 1},
		{Cluster: true, Sentinels: 1},
		{Replicas: -1},
		{Sentinels: 1, TLS: &redisconn.SpawnTLS{}},
	} {
		if d, err := redisconn.Spawn(context.Background(), o); err == nil {
			d.Close()
			t.Errorf("Spawn(%+v) succeeded", o)
		}
	}
}

func TestSpawnBadDirectiveFailsWithLog(t *testing.T) {
	t.Parallel()
	redistest.Binary(t)
	_, err := redisconn.Spawn(context.Background(), redisconn.SpawnOptions{Dir: t.TempDir(), Args: []string{"--no-such-directive", "1"}})
	if err == nil {
		t.Fatal("Spawn with a bad directive succeeded")
	}
	if !strings.Contains(err.Error(), "exited") {
		t.Errorf("error %q does not say the server exited", err)
	}
}

func TestSpawnCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	redistest.Binary(t)
	d, err := redisconn.Spawn(context.Background(), redisconn.SpawnOptions{Replicas: 1, Sentinels: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pids := d.Pids()
	if len(pids) != 3 {
		t.Fatalf("pids = %v, want 3", pids)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if redistest.Alive(pid) {
			t.Errorf("pid %d alive after Close", pid)
		}
	}
	if _, err := os.Stat(d.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s left behind: %v", d.Dir, err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestSpawnStopsWithContext(t *testing.T) {
	t.Parallel()
	redistest.Binary(t)
	ctx, cancel := context.WithCancel(context.Background())
	d, err := redisconn.Spawn(ctx, redisconn.SpawnOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pids := d.Pids()
	cancel()
	for _, pid := range pids {
		waitFor(t, fmt.Sprintf("pid %d gone after cancel", pid), func() bool { return !redistest.Alive(pid) })
	}
}

const childEnv = "RLCTL_SPAWN_TEST_CHILD"

// TestSpawnChildProcess is not a test on its own: TestSpawnDiesWithParent
// runs the test binary again with childEnv set, and this spawns servers,
// prints their pids and waits to be killed or interrupted.
func TestSpawnChildProcess(t *testing.T) {
	spec, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var d *redisconn.Deployment
	if spec == "" {
		var err error
		d, err = redisconn.Spawn(ctx, redisconn.SpawnOptions{Replicas: 1, Sentinels: 1, Dir: os.Getenv("RLCTL_SPAWN_TEST_DIR")})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		defer d.Close()
	} else {
		// The way rlctl starts a topology: Open, stopped by its stop.
		cfg, stopRedis, err := redisconn.Open(ctx, spec, redisconn.Options{})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		defer stopRedis()
		d = cfg.Deployment()
	}
	var ps, as []string
	for _, p := range d.Pids() {
		ps = append(ps, strconv.Itoa(p))
	}
	for _, p := range append(append([]*redisconn.Process(nil), d.Servers...), d.Sentinels...) {
		as = append(as, p.Addr)
	}
	fmt.Println("ADDRS", strings.Join(as, " "))
	fmt.Println("PIDS", strings.Join(ps, " "))
	select {
	case <-ctx.Done():
	case <-time.After(60 * time.Second): // bounded even if the parent forgets us
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSpawnOddPassword: a password with spaces, quotes, backslashes, URL
// delimiters and non-ASCII bytes survives redis.conf quoting and URL
// escaping, and never shows on a process command line.
func TestSpawnOddPassword(t *testing.T) {
	t.Parallel()
	const pw = "a b\"c\\d@e:f/g?h#i%j\u00e9"
	for _, user := range []string{"", "ops@user"} {
		t.Run("user="+user, func(t *testing.T) {
			d := redistest.Spawn(t, redisconn.SpawnOptions{Username: user, Password: pw, Replicas: 1, Sentinels: 1})
			for _, u := range []string{d.URL(), d.ServerURL(0)} {
				cfg, err := redisconn.Parse(redisconn.Options{URL: u})
				if err != nil {
					t.Fatalf("Parse(%s): %v", redisconn.Redact(u), err)
				}
				if cfg.Target().Password != pw {
					t.Fatalf("URL round trip changed the password")
				}
				c, err := cfg.Connect(context.Background())
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				c.Close()
			}
			for _, pid := range d.Pids() {
				cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(cmdline), "h#i") {
					t.Errorf("pid %d has the password on its command line", pid)
				}
			}
		})
	}
}

// TestSpawnTakesOnlyItsOwnServerAsReady: a spawned node whose port another
// server took after it was picked is not ready because that server answers
// (CI once saw CLUSTER ADDSLOTSRANGE reach a test's plain server); only the
// process rlctl started counts.
func TestSpawnTakesOnlyItsOwnServerAsReady(t *testing.T) {
	t.Parallel()
	other := redistest.Start(t)
	c := other.Client(t)
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(redisconn.InfoField(info, "process_id"))
	if err != nil {
		t.Fatalf("process_id in %q: %v", info, err)
	}
	if err := redisconn.IsOwn(context.Background(), c, other.Addr, pid); err != nil {
		t.Errorf("the server's own process: %v", err)
	}
	err = redisconn.IsOwn(context.Background(), c, other.Addr, os.Getpid())
	if err == nil || !strings.Contains(err.Error(), "another server") {
		t.Errorf("a process that is not the one answering: %v, want it refused", err)
	}
}

// TestSpawnRetriesAPortTakenMeanwhile: the port picked for a server or a
// Sentinel was free when picked, but another process can bind it before
// the server does. The server then exits ("Address already in use"), and
// the spawn starts it again on another port. Here the first port each of
// them gets is one this test holds. Not parallel: it swaps the spawn's
// port finder, and the parallel tests wait until it is done.
func TestSpawnRetriesAPortTakenMeanwhile(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	go func() {
		// Refused at once, a readiness ping moves on to find the server
		// gone, rather than wait out its timeout.
		for {
			c, err := held.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	taken := held.Addr().(*net.TCPAddr).Port
	var mu sync.Mutex
	calls, handed := 0, 0
	restore := redisconn.SetFreePort(func(next func() (int, error)) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		// The primary's first port, then the Sentinel's: calls 1 and 3
		// (a primary has no cluster bus port).
		if calls == 1 || calls == 3 {
			handed++
			return taken, nil
		}
		return next()
	})
	defer restore()

	d := redistest.Spawn(t, redisconn.SpawnOptions{Sentinels: 1})
	if handed != 2 {
		t.Fatalf("the held port was handed out %d times, want 2 (the primary's and the Sentinel's first)", handed)
	}
	for _, p := range []*redisconn.Process{d.Servers[0], d.Sentinels[0]} {
		if p.Port == taken {
			t.Errorf("%s runs on the held port %d", p.Role, taken)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := redis.NewSentinelClient(&redis.Options{Addr: d.Sentinels[0].Addr})
	defer s.Close()
	addr, err := s.GetMasterAddrByName(ctx, d.MasterName).Result()
	if err != nil || len(addr) != 2 || net.JoinHostPort(addr[0], addr[1]) != d.Servers[0].Addr {
		t.Errorf("the Sentinel names %v (%v) as the primary, want %s", addr, err, d.Servers[0].Addr)
	}
}
