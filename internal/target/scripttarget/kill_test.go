package scripttarget

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/traffic"
)

// callingTarget is a target calling script on srv, each call bounded by
// timeout.
func callingTarget(t *testing.T, srv *redistest.Server, script string, timeout time.Duration) traffic.Target {
	t.Helper()
	tgt, err := New(context.Background(), Options{
		Source: script, Gateways: 2, NewClient: scriptClients(srv),
		Keys: []string{"loop:{id}"}, Args: []string{"{limit}", "{window_ms}"}, Allowed: "== 1", Limit: rate.Limit{Count: 1, Window: time.Second},
		Timeout: timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	return tgt
}

// loopingTarget is callingTarget for a script that never ends: its calls
// time out after 50ms.
func loopingTarget(t *testing.T, srv *redistest.Server, script string) traffic.Target {
	return callingTarget(t, srv, script, 50*time.Millisecond)
}

// ping reports what srv answers PING within a second.
func ping(t *testing.T, srv *redistest.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return srv.Client(t).Ping(ctx).Err()
}

// A script that loops forever, on a real redis-server: rlctl's calls time
// out, and once the traffic is over the server answers PING, not BUSY:
// the target stopped the script with SCRIPT KILL, and says so. The server
// answers BUSY after 100ms of a script (busy-reply-threshold), not the
// default 5s, to keep the test short.
func TestLoopingScriptIsKilled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--busy-reply-threshold", "100")
	tgt := loopingTarget(t, srv, `while true do end`)
	for i := range 3 {
		if res := tgt.Do(context.Background(), traffic.Request{ID: "u", Gateway: i % 2}); res.Outcome != decision.Error {
			t.Fatalf("call %d: %v, want an error (the call times out)", i, res.Outcome)
		}
	}
	notes, err := tgt.(Settler).Settle()
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	if err := ping(t, srv); err != nil {
		t.Fatalf("after the run PING answers %v, want PONG", err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "SCRIPT KILL") || !strings.Contains(notes[0], "target.timeout (50ms)") {
		t.Fatalf("notes %q, want one saying the script was stopped with SCRIPT KILL", notes)
	}
}

// A script that writes and then loops cannot be killed (Redis answers
// UNKILLABLE): Settle says so, in a note and as an error with exit code 3,
// and quotes Redis. The test's own server is then shut down with SHUTDOWN
// NOSAVE, the only way out of it; rlctl never sends that. The one call
// gets a second, not 50ms: a first call dials and loads the script, and on
// a busy machine its 50ms once ran out before the script was sent, so
// nothing ran and there was nothing to kill.
func TestWritingLoopingScriptIsReportedUnkillable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--busy-reply-threshold", "100")
	tgt := callingTarget(t, srv, `redis.call('SET', KEYS[1], 1) while true do end`, time.Second)
	if res := tgt.Do(context.Background(), traffic.Request{ID: "u"}); res.Outcome != decision.Error {
		t.Fatalf("%v, want an error (the call times out)", res.Outcome)
	}
	notes, err := tgt.(Settler).Settle()
	if err == nil || exitcode.Of(err) != exitcode.Unreachable || !strings.Contains(err.Error(), "UNKILLABLE") {
		t.Fatalf("settle: %v (exit %d), want an UNKILLABLE error with exit 3", err, exitcode.Of(err))
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "could not be killed") || !strings.Contains(notes[0], "SHUTDOWN NOSAVE") {
		t.Fatalf("notes %q, want one saying the script could not be killed", notes)
	}
	if err := ping(t, srv); err == nil || !strings.HasPrefix(err.Error(), "BUSY") {
		t.Fatalf("PING answers %v; the script should still hold the server", err)
	}
	srv.Client(t).ShutdownNoSave(context.Background())
}

// A call that ends in time leaves nothing to settle. The call gets 2s: a
// first call (a dial, the script loaded) on a busy machine took over 50ms.
func TestSettleAfterAnOrdinaryRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tgt := callingTarget(t, srv, fixedWindowLua, 2*time.Second)
	if res := tgt.Do(context.Background(), traffic.Request{ID: "u"}); res.Outcome != decision.Allowed {
		t.Fatalf("%v (%v), want allowed", res.Outcome, res.Err)
	}
	if notes, err := tgt.(Settler).Settle(); len(notes) > 0 || err != nil {
		t.Fatalf("settle: %q, %v; want nothing", notes, err)
	}
}
