package keyspace

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestRepairLayoutsSayWhichTTL: a dry run reports, per layout, the TTL
// its keys without TTL would get (a fixed window's W, a sliding window's
// 2W) and which keys; a layout whose rule is unknown without --limit is
// listed with TTL 0; nothing is changed.
func TestRepairLayoutsSayWhichTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	must(t, c.Set(ctx, "rl:fw:{a}", 3, 0).Err())
	must(t, c.Set(ctx, "rl:fw:{b}", 4, 0).Err())
	must(t, c.Set(ctx, "rl:sw:{c}:29400000", 2, 0).Err())
	must(t, c.Set(ctx, "rl:fw:{d}", "not a counter", 0).Err())
	limit := rate.Limit{Count: 10, Window: time.Minute}
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: NewRegistry(Params{Limit: limit}).All(), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []LayoutTTL{
		{Layout: "redis-fixed-window", TTLMillis: time.Minute.Milliseconds(), Keys: 2, Sample: []string{"rl:fw:{a}", "rl:fw:{b}"}},
		{Layout: "redis-sliding-window", TTLMillis: 2 * time.Minute.Milliseconds(), Keys: 1, Sample: []string{"rl:sw:{c}:29400000"}},
	}
	got := st.Layouts
	for i := range got {
		slices.Sort(got[i].Sample)
	}
	slices.SortFunc(got, func(a, b LayoutTTL) int { return int(a.TTLMillis - b.TTLMillis) })
	if !slices.EqualFunc(got, want, func(a, b LayoutTTL) bool {
		return a.Layout == b.Layout && a.TTLMillis == b.TTLMillis && a.Keys == b.Keys && slices.Equal(a.Sample, b.Sample)
	}) || st.MissingTTL != 3 || st.NotFitting != 1 {
		t.Fatalf("layouts %+v, missing %d, not fitting %d; want %+v, 3 and 1", got, st.MissingTTL, st.NotFitting, want)
	}
	if c.PTTL(ctx, "rl:fw:{a}").Val() != -1 {
		t.Fatal("the dry run set a TTL")
	}
	st, err = RepairTTL(ctx, c, RepairOptions{Schemas: NewRegistry(Params{}).All(), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range st.Layouts {
		if l.TTLMillis != 0 {
			t.Fatalf("without a limit %s's TTL is %dms, want 0 (unknown)", l.Layout, l.TTLMillis)
		}
	}
	if st.NoRule != 3 || len(st.Layouts) != 2 {
		t.Fatalf("without a limit: %d with no rule in %+v, want 3 in 2 layouts", st.NoRule, st.Layouts)
	}
}
