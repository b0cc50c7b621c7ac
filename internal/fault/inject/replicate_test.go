package inject

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

// lost counts what the new primary lacks among the counts that still
// limited admissions when it was read: not a counter whose TTL ran out
// meanwhile, nor a sliding-log entry that aged out of the window (a
// request on the new primary trims it, which a cardinality comparison
// took for a loss), and new admissions do not hide a lost entry.
func TestLostCountsOnlyWhatStillCounted(t *testing.T) {
	const w = time.Second
	before := time.Unix(1_000_000, 0)
	read := before.Add(100 * time.Millisecond) // the second reading
	ms := func(d time.Duration) float64 { return float64(before.Add(d).UnixNano()) / 1e6 }
	log := func(scores map[string]time.Duration) counter {
		c := counter{entries: map[string]float64{}}
		for m, d := range scores {
			c.entries[m] = ms(d)
		}
		c.n = int64(len(c.entries))
		return c
	}
	after := func(keys map[string]counter) counts { return counts{keys: keys, at: read, now: read} }
	for _, tc := range []struct {
		name     string
		had, has map[string]counter
		want     int64
	}{
		{
			name: "copy-then-trim",
			// a and b aged out by the second reading (its cutoff is
			// −900ms) and one request on the new primary trimmed both and
			// added d: one entry fewer, none lost.
			had:  map[string]counter{"k": log(map[string]time.Duration{"a": -950 * time.Millisecond, "b": -920 * time.Millisecond, "c": -10 * time.Millisecond})},
			has:  map[string]counter{"k": log(map[string]time.Duration{"c": -10 * time.Millisecond, "d": 90 * time.Millisecond})},
			want: 0,
		},
		{
			name: "empty-stand-in",
			// b and c still counted; two new admissions do not hide them.
			had:  map[string]counter{"k": log(map[string]time.Duration{"a": -950 * time.Millisecond, "b": -800 * time.Millisecond, "c": -10 * time.Millisecond})},
			has:  map[string]counter{"k": log(map[string]time.Duration{"d": 80 * time.Millisecond, "e": 90 * time.Millisecond})},
			want: 2,
		},
		{
			name: "counter-short",
			had:  map[string]counter{"k": {n: 20, expires: before.Add(500 * time.Millisecond)}},
			has:  map[string]counter{"k": {n: 3}},
			want: 17,
		},
		{
			name: "counter-window-over",
			// its TTL ran out before the second reading: the new window's
			// count is not a loss.
			had:  map[string]counter{"k": {n: 20, expires: before.Add(50 * time.Millisecond)}},
			has:  map[string]counter{"k": {n: 1}},
			want: 0,
		},
		{
			name: "counter-no-ttl-gone",
			had:  map[string]counter{"k": {n: 7}},
			has:  map[string]counter{},
			want: 7,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byKey := lost(counts{keys: tc.had, at: before, now: before}, after(tc.has), w)
			var got int64
			for k, n := range byKey {
				if n <= 0 || tc.had[k].n == 0 && tc.had[k].entries == nil {
					t.Errorf("key %s: lost %d", k, n)
				}
				got += n
			}
			if got != tc.want {
				t.Errorf("lost %d, want %d", got, tc.want)
			}
		})
	}
}

// A failover whose hook starts as the run ends (its context already
// cancelled, as a starved hook's is) is still carried out whole and
// measured: the stand-in gets every count, and counts_lost is read.
func TestFailoverLateInRunIsMeasured(t *testing.T) {
	t.Parallel()
	old, next := redistest.Start(t), redistest.Start(t)
	lc := limiter.Config{Algorithm: design.RedisFixedWindow, Limit: rate.Limit{Count: 100, Window: time.Minute}}
	pattern := limiter.KeyPattern(lc)
	from := redis.NewClient(&redis.Options{Addr: old.Addr})
	to := redis.NewClient(&redis.Options{Addr: next.Addr})
	t.Cleanup(func() { from.Close(); to.Close() })
	ctx := context.Background()
	keys := limiter.Keys(lc, "user-1", time.Now())
	if len(keys) != 1 {
		t.Fatalf("fixed window's keys for one identity: %q", keys)
	}
	if err := from.Set(ctx, keys[0], 7, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	e := &Faults{lc: lc, reads: make([]time.Time, 1)}
	var copyErr error
	hook := e.countLost(0, from, to, func(ctx context.Context) {
		copyErr = copyKeys(ctx, keyspace.Patterns{pattern}, from, to)
	})
	ended, cancel := context.WithCancel(ctx)
	cancel()
	hook(ended)

	if copyErr != nil {
		t.Errorf("copy under the run's end: %v", copyErr)
	}
	if n, err := to.Get(ctx, keys[0]).Int64(); err != nil || n != 7 {
		t.Errorf("stand-in holds %d (%v), want the 7 copied", n, err)
	}
	if e.reads[0].IsZero() {
		t.Error("no time kept for the new primary's reading")
	}
	if v, ok := e.Extra(nil)[metric.CountsLost]; !ok || v != 0 {
		t.Errorf("counts_lost %v (measured %t), want 0 measured; notes %q", v, ok, e.RunNotes())
	}
}
