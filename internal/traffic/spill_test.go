package traffic

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// TestRunSpillsPastKeepInMemory: a run allowed more requests than it keeps
// in memory records them to disk as it goes, and reads back every one.
func TestRunSpillsPastKeepInMemory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lim := newWindowLimiter(50, time.Hour, 2)
	plan := Plan{Rate: perSecond(10000), Duration: 300 * time.Millisecond, MaxRequests: 3000, Identities: 4}
	const keep = 256
	var last Stats
	h, err := Run(context.Background(), lim, plan, RunOptions{
		Meta: history.Meta{Scenario: "soak"}, SpillDir: dir, KeepInMemory: keep,
		Progress: func(s Stats) { last = s },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if !h.Spilled() || h.SpillDir() != dir {
		t.Fatalf("a run of %d records keeping %d in memory did not spill to %s", h.Len(), keep, dir)
	}
	var n int
	var c [decision.Dropped + 1]uint64
	err = h.Chunks(func(ch *history.History) error {
		for i := range ch.Len() {
			r := ch.At(i)
			if r.Outcome != decision.Dropped && (r.Sent < r.Intended || r.Received < r.Sent) {
				t.Fatalf("record %d: times out of order: %+v", n, r)
			}
			c[r.Outcome]++
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A busy machine drops some of the plan (1432 of 3000 once): the
	// records need only fill several chunks of keep.
	if n != h.Len() || n < 4*keep || uint64(n)+uint64(h.Meta.Drops.Total()) != last.Allowed+last.Denied+last.Errors+last.Dropped {
		t.Fatalf("read back %d records of %d; the run counted %+v", n, h.Len(), last)
	}
	if c[decision.Allowed] != last.Allowed || c[decision.Allowed] != 200 {
		t.Fatalf("%d allowed read back, the run counted %d; want 200 (50 per identity)", c[decision.Allowed], last.Allowed)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("closed, the run left %d files", len(es))
	}
}
