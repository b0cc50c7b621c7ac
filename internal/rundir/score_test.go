package rundir

import (
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
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
