package scripttarget

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/hotpath"
)

// defaultBusyThreshold is how long Redis runs a script before it starts
// answering other clients BUSY (busy-reply-threshold, formerly
// lua-time-limit), when the server does not say.
const defaultBusyThreshold = 5 * time.Second

// maxBusyWait bounds how long a killer waits for a server to answer at
// all, whatever threshold it announced.
const maxBusyWait = 60 * time.Second

// busyMargin is how long past the threshold a killer keeps asking before
// it gives up: the server answers BUSY only once it looks up from the
// script, at the threshold.
const busyMargin = 2 * time.Second

// killer stops a script that rlctl's own call gave up on. A call that timed
// out leaves its script running inside Redis; one that loops would have the
// server answer BUSY to every client long after rlctl exits. Redis lets
// nothing else in while a script runs, and only once the script has run for
// busy-reply-threshold does it answer other clients at all (BUSY, save to
// SCRIPT KILL and SHUTDOWN NOSAVE), so the killer asks with PING until it
// hears PONG (nothing is running: the script ended by itself) or BUSY, and
// then sends SCRIPT KILL. Redis kills a script only if it has not written
// (UNKILLABLE otherwise: killing it would leave half its writes); that is
// reported, and never forced, SHUTDOWN NOSAVE being the server's end.
//
// SCRIPT KILL stops whichever script is running, and Redis does not say
// whose it is while it runs: the killer sends it only after one of rlctl's
// own calls timed out and the server went on to answer BUSY.
type killer struct {
	// control returns a client outside any fault the run injects.
	control func() redis.UniversalClient
	timeout time.Duration // the call timeout, for messages
	wait    time.Duration // how long to wait for an answer to PING

	mu      sync.Mutex
	running bool
	pending bool // a call timed out while the killer was already at work
	wg      sync.WaitGroup
	client  redis.UniversalClient

	killed int
	// stuck is Redis's answer to a SCRIPT KILL that failed (UNKILLABLE:
	// the script had written); the killer stops trying then.
	stuck      string
	unanswered bool // a PING went unanswered for wait
}

// busyWait reads the server's busy-reply-threshold (lua-time-limit before
// Redis 7) through c and returns how long a killer must wait for an answer
// beyond it. A server that will not say (CONFIG disabled, an ACL, the
// embedded Redis) gets the default.
func busyWait(ctx context.Context, c redis.UniversalClient) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	threshold := defaultBusyThreshold
	for _, name := range []string{"busy-reply-threshold", "lua-time-limit"} {
		m, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			break
		}
		if ms, err := strconv.ParseInt(m[name], 10, 64); err == nil && ms > 0 {
			threshold = time.Duration(ms) * time.Millisecond
			break
		}
	}
	return min(threshold+busyMargin, maxBusyWait)
}

// timedOut reports whether err is a call that gave up waiting after its
// request may have reached the server (a read deadline, the context's), so
// its script may still be running there. Waiting for a free connection
// sent nothing.
func timedOut(err error) bool {
	if err == nil || errors.Is(err, hotpath.ErrPoolTimeout) {
		return false
	}
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || (errors.As(err, &ne) && ne.Timeout())
}

// trigger starts the killer, or has it look once more when it is already at
// work: the script of a call that timed out meanwhile may be the next to
// run.
func (k *killer) trigger() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stuck != "" {
		return // the server stays busy with a script rlctl cannot kill
	}
	if k.running {
		k.pending = true
		return
	}
	k.running = true
	k.wg.Add(1)
	go k.loop()
}

func (k *killer) loop() {
	defer k.wg.Done()
	for {
		k.once()
		k.mu.Lock()
		if !k.pending || k.stuck != "" {
			k.running = false
			k.mu.Unlock()
			return
		}
		k.pending = false
		k.mu.Unlock()
	}
}

// once checks every primary the client reaches (one, or each of a
// Cluster's) and kills a script found running there.
func (k *killer) once() {
	k.mu.Lock()
	if k.client == nil {
		k.client = k.control()
	}
	c := k.client
	k.mu.Unlock()
	// Not the run's context: an interrupted run must not leave the
	// server busy either.
	ctx := context.Background()
	if cc, ok := c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			k.settle(ctx, node)
			return nil
		})
		return
	}
	k.settle(ctx, c)
}

// settle waits until the server answers PING, and sends SCRIPT KILL when
// the answer is BUSY.
func (k *killer) settle(ctx context.Context, c redis.Cmdable) {
	ctx, cancel := context.WithTimeout(ctx, k.wait)
	defer cancel()
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			return // nothing running: the script ended by itself
		}
		if isBusy(err) {
			break
		}
		if ctx.Err() != nil {
			// Only a server that took the connection and kept silent may
			// be in a script; one that refused it is down (a fault, a
			// failover) and runs none.
			var ne net.Error
			if (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, context.DeadlineExceeded) {
				k.mu.Lock()
				k.unanswered = true
				k.mu.Unlock()
			}
			return
		}
		// The client's own timeout may be shorter than the server's
		// threshold: ask again on a fresh connection.
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	err := c.ScriptKill(ctx).Err()
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err == nil:
		k.killed++
	case strings.HasPrefix(err.Error(), "NOTBUSY"):
		// It ended between the BUSY and the kill.
	default:
		k.stuck = err.Error()
	}
}

func isBusy(err error) bool { return strings.HasPrefix(err.Error(), "BUSY") }

// settled waits for the killer (every trigger so far has been looked into)
// and says what it did: notes for the report, and an error when a script
// could not be killed, since the server then answers BUSY to every client
// until the script ends.
func (k *killer) settled() ([]string, error) {
	k.wg.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	var notes []string
	var err error
	if k.killed > 0 {
		calls := "1 script call"
		if k.killed > 1 {
			calls = fmt.Sprintf("%d script calls", k.killed)
		}
		notes = append(notes, fmt.Sprintf("%s ran past %s and kept Redis busy: once Redis answered BUSY, rlctl stopped each with SCRIPT KILL, so the server serves its clients again", calls, k.limitText()))
	}
	if k.stuck != "" {
		why := ""
		if strings.HasPrefix(k.stuck, "UNKILLABLE") {
			why = " (the script had written, and Redis will not stop a script halfway through its writes)"
		}
		msg := fmt.Sprintf("a script call ran past %s and could not be killed: Redis answered SCRIPT KILL with %q%s; the server answers BUSY to every client until the script ends or someone runs SHUTDOWN NOSAVE there", k.limitText(), k.stuck, why)
		notes = append(notes, msg)
		err = exitcode.With(errors.New(msg), exitcode.Unreachable)
	}
	if k.unanswered {
		notes = append(notes, fmt.Sprintf("a script call ran past %s and Redis then answered neither PING nor SCRIPT KILL within %v: if the script is still running there, Redis answers BUSY until it ends (SCRIPT KILL stops it if it has not written)", k.limitText(), k.wait))
	}
	return notes, err
}

// limitText names the limit a call ran past, for notes.
func (k *killer) limitText() string {
	if k.timeout <= 0 {
		return "its client's timeout"
	}
	return fmt.Sprintf("target.timeout (%v)", k.timeout)
}

// close waits for the killer and closes its client.
func (k *killer) close() error {
	k.wg.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.client == nil {
		return nil
	}
	err := k.client.Close()
	k.client = nil
	return err
}
