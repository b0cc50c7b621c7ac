//go:build unix

package hotpath_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/hotpath"
	"github.com/rlctl/rlctl/internal/redistest"
)

// A call whose deadline passes before its request is written (a busy
// machine, or the EVAL after a NOSCRIPT late in a call's time) still
// ends at its deadline while the server stands still (SIGSTOP, as a
// stalled Redis). The pool checks a connection that was read from before
// it writes on it, after rueidis set the request's deadline; the check
// must leave that deadline in place, or the call waits for as long as the
// server does (a looping user script: for good).
func TestDeadlinePassedBeforeTheWriteStillEndsTheCall(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	o := srv.Client(t).Options()
	o.PoolSize = 1
	p, _ := hotpath.FromClient(redis.NewClient(o))
	t.Cleanup(func() { p.Close() })
	// One connection, read from once (its PING): the next request on it
	// is checked before it is written.
	if err := p.Warm(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	pid := srv.Deployment.Servers[0].Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP redis-server %d: %v", pid, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	var a hotpath.Args
	a.Key("stalled")
	a.Int(1)
	a.Int(0)
	done := make(chan error, 1)
	go func() {
		_, err := p.EvalIntsUntil(context.Background(), time.Now(), incr, &a, nil)
		done <- err
	}()
	// Generous: this asserts "ends at its deadline, not when the server
	// resumes", not a speed.
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a stopped server answered")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call whose deadline had passed still waited on the stopped server 5s later")
	}
}
