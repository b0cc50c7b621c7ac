package traffic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
	"github.com/rlctl/rlctl/internal/workload"
)

// Clients that honour Retry-After without jitter come back exactly when
// told: each retry is intended at its previous answer's arrival plus what
// that answer said, it records what it was told and how long it waited,
// no request is tried more than MaxAttempts times, and every client keeps
// to its identity.
func TestClientsRetryAsTold(t *testing.T) {
	t.Parallel()
	lim := newWindowLimiter(3, 100*time.Millisecond, 2)
	plan := Plan{Model: workload.ModelClosed, Concurrency: 8, Identities: 2, Duration: 600 * time.Millisecond, MaxRequests: 5000,
		Think: 30 * time.Millisecond, Retry: &workload.RetryPolicy{Honor: workload.HonorRetryAfter, Jitter: workload.JitterNone, MaxAttempts: 3}}
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !h.HasRetries() || !strings.Contains(h.Meta.Retry, "honor retry-after") {
		t.Fatalf("no retries recorded (meta %q)", h.Meta.Retry)
	}
	retries := 0
	for i := range h.Len() {
		r := h.At(i)
		if r.Attempt == 0 {
			continue
		}
		retries++
		if r.Attempt >= 3 {
			t.Fatalf("record %d is attempt %d of at most 3", i, r.Attempt+1)
		}
		if r.Told == history.NoTime || r.Waited < 0 {
			t.Fatalf("retry %d: told %v waited %v", i, r.Told, r.Waited)
		}
		// The wait began when the denial arrived (Sent − Waited) and was
		// due to end exactly Told later.
		if due := r.Sent - r.Waited + r.Told; r.Intended != due {
			t.Fatalf("retry %d intended at %v, want its denial's arrival plus Retry-After = %v", i, r.Intended, due)
		}
		if r.Waited < r.Told {
			t.Fatalf("retry %d waited %v, less than the %v it was told", i, r.Waited, r.Told)
		}
	}
	if retries == 0 {
		t.Fatal("no retries")
	}
}

// Without a retry policy a closed client with think time sends, waits and
// sends again, never retrying; the open model refuses both.
func TestThinkTimeAndOpenModelRefusal(t *testing.T) {
	t.Parallel()
	lim := newWindowLimiter(1, time.Hour, 1)
	plan := Plan{Model: workload.ModelClosed, Concurrency: 2, Duration: 200 * time.Millisecond, MaxRequests: 1000, Think: 50 * time.Millisecond}
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.HasRetries() {
		t.Fatal("retries without a retry policy")
	}
	// Each client sends at most once per think time: at most 4 each in 200ms.
	if n := h.Len(); n == 0 || n > 8 {
		t.Fatalf("%d requests from 2 clients thinking 50ms for 200ms", n)
	}
	if c := traffictest.Counts(h); c[decision.Denied] == 0 {
		t.Fatalf("outcomes %v: the second request of the one-per-hour identity should be denied", c)
	}
	open := Plan{Rate: rate.Limit{Count: 10, Window: time.Second}, Duration: time.Second, MaxRequests: 10, Retry: &workload.RetryPolicy{}}
	if _, err := Run(context.Background(), lim, open, RunOptions{}); err == nil {
		t.Fatal("the open model accepted a retry policy")
	}
}

// Users behind one source address on an address-keyed limit share it: two
// users of one request each per hour, keyed by their one address, get one
// request through between them; keyed by themselves, both get theirs.
func TestKeyedBySourceSharesTheLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		target  func(Target) Target
		allowed int
	}{
		{"by address", func(t Target) Target { return KeyedBySource(t, 1) }, 1},
		{"by identity", func(t Target) Target { return t }, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lim := newWindowLimiter(1, time.Hour, 1)
			plan := Plan{Model: workload.ModelClosed, Concurrency: 2, Identities: 2, Duration: time.Second, MaxRequests: 2, Think: time.Hour}
			h, err := Run(context.Background(), tt.target(lim), plan, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c := traffictest.Counts(h); c[decision.Allowed] != tt.allowed || h.Len() != 2 {
				t.Fatalf("outcomes %v, want %d allowed of 2", c, tt.allowed)
			}
			if h.Meta.Identities[0] != "user-0" || h.Meta.Identities[1] != "user-1" {
				t.Fatalf("identities %v: the history keeps the users", h.Meta.Identities)
			}
		})
	}
}
