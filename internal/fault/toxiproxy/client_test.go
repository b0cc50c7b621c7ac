package toxiproxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault/toxiproxy"
	"github.com/rlctl/rlctl/internal/redistest"
)

func newClient(t *testing.T, s *setup) *toxiproxy.Client {
	t.Helper()
	c, err := toxiproxy.New(s.api, s.proxy)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDownMakesPingFailUntilUndone(t *testing.T) {
	s := newSetup(t)
	c := newClient(t, s)
	r := s.viaProxy(t)
	if err := ping(r); err != nil {
		t.Fatalf("PING through the proxy before the fault: %v", err)
	}
	undo, err := c.Down(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.proxyState(t).Enabled {
		t.Fatal("the proxy is still enabled after Down")
	}
	if err := ping(r); err == nil {
		t.Fatal("PING through a proxy that is down succeeded")
	}
	if err := undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.proxyState(t).Enabled {
		t.Fatal("the proxy is still disabled after the undo")
	}
	if err := ping(r); err != nil {
		t.Fatalf("PING after the undo: %v", err)
	}
}

func TestLatencyIsFeltAndRemoved(t *testing.T) {
	s := newSetup(t)
	c := newClient(t, s)
	r := s.viaProxy(t)
	if err := ping(r); err != nil { // the connection is open before the toxic
		t.Fatal(err)
	}
	const latency = 150 * time.Millisecond
	undo, err := c.Latency(context.Background(), latency, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := s.proxyState(t)
	if len(p.Toxics) != 1 || p.Toxics[0].Type != "latency" || p.Toxics[0].Attributes["latency"] != float64(latency.Milliseconds()) {
		t.Fatalf("toxics after Latency: %+v", p.Toxics)
	}
	start := time.Now()
	if err := ping(r); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < latency {
		t.Fatalf("PING through a %s latency toxic took %s", latency, took)
	}
	if err := undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := toxicNames(s.proxyState(t)); len(n) != 0 {
		t.Fatalf("toxics left after the undo: %v", n)
	}
	if got := c.Added(); len(got) != 0 {
		t.Fatalf("the client still remembers %v", got)
	}
}

func TestLatencyJitterReachesTheToxic(t *testing.T) {
	s := newSetup(t)
	c := newClient(t, s)
	if _, err := c.Latency(context.Background(), 80*time.Millisecond, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Cleanup(context.Background()) })
	p := s.proxyState(t)
	if len(p.Toxics) != 1 || p.Toxics[0].Attributes["jitter"] != float64(30) || p.Toxics[0].Attributes["latency"] != float64(80) {
		t.Fatalf("toxics: %+v", p.Toxics)
	}
}

func TestResetPeerCutsConnections(t *testing.T) {
	s := newSetup(t)
	c := newClient(t, s)
	r := s.viaProxy(t)
	if _, err := c.ResetPeer(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if err := ping(r); err == nil {
		t.Fatal("PING through a reset_peer toxic succeeded")
	}
	if err := c.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ping(r); err != nil {
		t.Fatalf("PING after cleanup: %v", err)
	}
}

// Cleanup removes what the client added and only that: a toxic another
// user added before and one added during the run survive, and so does
// the state of a proxy someone else disabled.
func TestCleanupRemovesOnlyItsOwn(t *testing.T) {
	s := newSetup(t)
	theirs := map[string]any{"name": "ops-latency", "type": "latency", "stream": "upstream", "toxicity": 1, "attributes": map[string]any{"latency": 5}}
	apiCall(t, s.api, http.MethodPost, "/proxies/"+s.proxy+"/toxics", theirs, nil)
	c := newClient(t, s)
	ctx := context.Background()
	if _, err := c.Latency(ctx, 50*time.Millisecond, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetPeer(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Down(ctx); err != nil {
		t.Fatal(err)
	}
	during := map[string]any{"name": "ops-slow", "type": "latency", "attributes": map[string]any{"latency": 1}}
	apiCall(t, s.api, http.MethodPost, "/proxies/"+s.proxy+"/toxics", during, nil)
	if n := toxicNames(s.proxyState(t)); len(n) != 4 {
		t.Fatalf("toxics before cleanup: %v", n)
	}
	if err := c.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	p := s.proxyState(t)
	names := toxicNames(p)
	slices.Sort(names)
	if !slices.Equal(names, []string{"ops-latency", "ops-slow"}) {
		t.Fatalf("toxics after cleanup: %v, want only the two others added", names)
	}
	if !p.Enabled {
		t.Fatal("cleanup left the proxy it disabled down")
	}

	// A proxy that was down before the client came stays down.
	apiCall(t, s.api, http.MethodPost, "/proxies/"+s.proxy, map[string]any{"enabled": false}, nil)
	c2 := newClient(t, s)
	if _, err := c2.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c2.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if s.proxyState(t).Enabled {
		t.Fatal("cleanup enabled a proxy someone else had disabled")
	}
}

func TestCleanupAfterTheRunWasCancelled(t *testing.T) {
	s := newSetup(t)
	c := newClient(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := c.Latency(ctx, 20*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Down(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := c.Cleanup(ctx); err != nil {
		t.Fatalf("cleanup on the cancelled run's context: %v", err)
	}
	p := s.proxyState(t)
	if len(p.Toxics) != 0 || !p.Enabled {
		t.Fatalf("after cleanup: toxics %v, enabled %v", toxicNames(p), p.Enabled)
	}
}

func TestUnknownProxyIsNamed(t *testing.T) {
	s := newSetup(t)
	c, err := toxiproxy.New(s.api, "no-such-proxy")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Latency(context.Background(), time.Millisecond, 0)
	if err == nil || !strings.Contains(err.Error(), `no proxy "no-such-proxy"`) || !strings.Contains(err.Error(), s.proxy) {
		t.Fatalf("error %v: want it to name the proxy asked for and the ones there are", err)
	}
	if got := exitcode.Of(err); got != exitcode.Usage {
		t.Fatalf("exit code %d, want %d", got, exitcode.Usage)
	}
	if _, err := c.Check(context.Background()); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("Check: %v", err)
	}
}

func TestUnreachableAPI(t *testing.T) {
	port := redistest.FreePort(t) // nothing listens there
	c, err := toxiproxy.New(fmt.Sprintf("http://127.0.0.1:%d", port), "redis")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Check(context.Background())
	if err == nil || exitcode.Of(err) != exitcode.Unreachable || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("error %v (exit %d), want unreachable, exit %d", err, exitcode.Of(err), exitcode.Unreachable)
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	for _, tc := range []struct{ api, proxy string }{
		{"127.0.0.1:8474", "redis"}, {"ftp://h:1", "redis"}, {"http://127.0.0.1:8474", ""},
	} {
		if _, err := toxiproxy.New(tc.api, tc.proxy); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("New(%q, %q): %v, want a usage error", tc.api, tc.proxy, err)
		}
	}
}

// helperEnv starts the test binary as a small program that uses the
// client the way rlctl does: faults applied, then SIGINT cancels its
// context and it cleans up on the way out.
const helperEnv = "RLCTL_TOXIPROXY_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(helperMain(spec))
	}
	os.Exit(m.Run())
}

func helperMain(spec string) int {
	api, proxy, _ := strings.Cut(spec, " ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := toxiproxy.New(api, proxy)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	defer func() {
		if err := c.Cleanup(ctx); err != nil {
			fmt.Println(err)
		}
	}()
	for _, f := range []func() error{
		func() error { _, err := c.Latency(ctx, 40*time.Millisecond, 5*time.Millisecond); return err },
		func() error { _, err := c.ResetPeer(ctx, 500*time.Millisecond); return err },
		func() error { _, err := c.Down(ctx); return err },
	} {
		if err := f(); err != nil {
			fmt.Println(err)
			return 3
		}
	}
	fmt.Println("ready")
	<-ctx.Done()
	return 130
}

func TestSIGINTRemovesTheToxics(t *testing.T) {
	s := newSetup(t)
	theirs := map[string]any{"name": "ops-latency", "type": "latency", "attributes": map[string]any{"latency": 5}}
	apiCall(t, s.api, http.MethodPost, "/proxies/"+s.proxy+"/toxics", theirs, nil)
	direct := s.redis.Client(t)
	foreign := redistest.SeedForeign(t, direct)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+s.api+" "+s.proxy)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("helper said %q", lines.Text())
	}
	p := s.proxyState(t)
	if len(p.Toxics) != 3 || p.Enabled {
		t.Fatalf("while the helper runs: toxics %v, enabled %v", toxicNames(p), p.Enabled)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("helper ended with %v, output %q; want exit 130", err, rest.String())
	}
	p = s.proxyState(t)
	if names := toxicNames(p); !slices.Equal(names, []string{"ops-latency"}) || !p.Enabled {
		t.Fatalf("after SIGINT: toxics %v, enabled %v; want only the other user's toxic, enabled", names, p.Enabled)
	}
	// The faults act on the network only: Redis holds what it held.
	foreign.AssertUnchanged(t, direct)
}
