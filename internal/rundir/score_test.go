package rundir

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/score"
)

// A target whose decision times run off rlctl's clock beyond each
// request's send and receive gets a note saying by how much; one within
// them, or a millisecond off, gets none.
func TestDecidedClockNote(t *testing.T) {
	t.Parallel()
	hist := func(decidedFrom func(sent, recv time.Duration) time.Duration) *history.History {
		h := history.New(history.Meta{Identities: []string{"u"}, Gateways: []string{"g"}}, 0)
		for i := range 20 {
			at := time.Duration(i) * time.Millisecond
			sent, recv := at+10*time.Microsecond, at+300*time.Microsecond
			h.Append(history.Record{Intended: at, Sent: sent, Received: recv, Decided: decidedFrom(sent, recv),
				RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Allowed})
		}
		return h
	}
	for _, tt := range []struct {
		name    string
		decided func(s, r time.Duration) time.Duration
		want    string
	}{
		{"inside", func(s, r time.Duration) time.Duration { return (s + r) / 2 }, ""},
		{"unknown", func(s, r time.Duration) time.Duration { return history.NoTime }, ""},
		{"ahead", func(s, r time.Duration) time.Duration { return r + 5*time.Millisecond }, "run 5ms ahead of rlctl's clock"},
		{"behind", func(s, r time.Duration) time.Duration { return s - 3*time.Millisecond }, "run 3ms behind rlctl's clock"},
		{"slightly off", func(s, r time.Duration) time.Duration { return r + 200*time.Microsecond }, ""},
	} {
		sc, err := Score(hist(tt.decided), Saved{Name: "clock", Limit: rate.Limit{Count: 100, Window: time.Second}, Shows: design.ShowsHolds})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, n := range sc.Notes {
			if strings.Contains(n, "decision times run") {
				got = n
			}
		}
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: note %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Requests dropped because every worker waited on slow answers are the
// target's slowness (exit 3) on a remote Redis, and rlctl's own on the
// embedded Redis, which answers inside rlctl (exit 1, saying so).
func TestDropsWaitingOnTheEmbeddedRedisAreRlctls(t *testing.T) {
	t.Parallel()
	// 1000/s against answers of 50ms needs 50 in flight; 10 workers drop
	// most of the plan.
	h := history.New(history.Meta{Identities: []string{"u"}, Gateways: []string{"g"}, Workers: 10}, 0)
	busy := make([]time.Duration, 10)
	for at := time.Duration(0); at < time.Second; at += time.Millisecond {
		w := slices.IndexFunc(busy, func(until time.Duration) bool { return until <= at })
		if w < 0 {
			h.Append(history.Record{Intended: at, Sent: history.NoTime, Received: history.NoTime, Decided: history.NoTime,
				RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Dropped})
			continue
		}
		busy[w] = at + 50*time.Millisecond
		h.Append(history.Record{Intended: at, Sent: at, Received: busy[w], Decided: history.NoTime,
			RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Allowed, By: decision.ByRedis})
	}
	for _, tt := range []struct {
		embedded bool
		code     int
		want     string
	}{
		{false, 3, "every worker was waiting on a slow answer"},
		{true, 1, "every worker was waiting on the embedded Redis, which answers inside rlctl: rlctl's own process was too slow"},
	} {
		sc, err := Score(h, Saved{Name: "drops", Limit: rate.Limit{Count: 100, Window: time.Second}, Shows: design.ShowsHolds, Embedded: tt.embedded})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(sc.Validity, func(c score.CheckResult) bool { return c.Name == "executed" })
		if i < 0 || sc.Validity[i].Held || !strings.Contains(sc.Validity[i].Reason, tt.want) || sc.ExitCode != tt.code {
			t.Errorf("embedded %v: exit %d, checks %+v; want exit %d and executed failing with %q", tt.embedded, sc.ExitCode, sc.Validity, tt.code, tt.want)
		}
	}
}
