package verify

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/threshold"
)

// TestScoreOfSpilledHistory: a soak run's history, spilled to disk, scores
// to the very report its in-memory twin does - figures, verdict, outages
// and notes - and gets the same note on its decision times' clock.
func TestScoreOfSpilledHistory(t *testing.T) {
	t.Parallel()
	limit := rate.Limit{Count: 20, Window: 100 * time.Millisecond}
	meta := history.Meta{Scenario: "soak", Limit: limit, Identities: []string{"a", "b", "c"}, Gateways: []string{"g0", "g1"}}
	mem := history.New(meta, 0)
	sp := history.New(meta, 0)
	if err := sp.Spill(history.SpillOptions{Dir: t.TempDir(), Keep: 100, Chunk: 64}); err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	rng := rand.New(rand.NewPCG(1, 15))
	for i := range 5000 {
		at := time.Duration(i) * 200 * time.Microsecond
		r := history.Record{
			Intended: at, Sent: at + 10*time.Microsecond, Received: at + time.Duration(300+rng.IntN(900))*time.Microsecond,
			Decided: history.NoTime, RetryAfter: history.NoTime, Identity: uint32(rng.IntN(3)), Round: history.NoRound,
			Gateway: uint16(rng.IntN(2)), Outcome: decision.Allowed, By: decision.ByRedis,
		}
		switch k := rng.IntN(20); {
		case k < 10:
			r.Outcome, r.RetryAfter = decision.Denied, 50*time.Millisecond
		case k == 10:
			r.Outcome, r.By = decision.Error, decision.ByUnanswered
		case k < 14:
			r.Decided = r.Sent + 5*time.Millisecond // a clock ahead of rlctl's
		}
		if i > 2000 && i < 2100 {
			r.Outcome, r.By = decision.Allowed, decision.ByFailOpen // an unplanned outage
		}
		mem.Append(r)
		sp.Append(r)
	}
	if !sp.Spilled() {
		t.Fatal("the history did not spill")
	}
	th, err := threshold.Parse("ceiling <= 1.5 * limit")
	if err != nil {
		t.Fatal(err)
	}
	s := Saved{Name: "soak", Algorithm: limiter.RedisFixedWindow, Limit: limit, Thresholds: []threshold.Threshold{th}}
	want, err := Score(mem, s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Score(sp, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Outages) == 0 || len(want.Notes) == 0 {
		t.Fatalf("the in-memory report shows no outage or note: %+v", want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("spilled history scored\n%+v\nin memory\n%+v", got, want)
	}
	if n, m := decidedClockNote(sp), decidedClockNote(mem); n != m || n == "" {
		t.Fatalf("clock note: spilled %q, in memory %q", n, m)
	}
}
