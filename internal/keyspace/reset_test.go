package keyspace

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redistest"
)

// TestResetDeletesOnlyKeysThatFitTheirLayout: an identity's keys are
// deleted, and keys named like its limiter keys whose type or value is not
// a limiter's are left alone, also when the value changed after Inspect
// read it (the check runs in the deleting script). A dry run deletes
// nothing and reports the same.
func TestResetDeletesOnlyKeysThatFitTheirLayout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	must(t, c.Set(ctx, "rl:fw:{alice}", 3, 0).Err())
	must(t, c.HSet(ctx, "rl:tb:{alice}", "tokens", "2.5", "ts", 1700000000000).Err())
	must(t, c.Set(ctx, "rl:gcra:{alice}", "soon", 0).Err())   // not a TAT
	must(t, c.HSet(ctx, "rl:tb:{bob}", "owner", "ops").Err()) // not a bucket
	must(t, c.Set(ctx, "rl:alice", "u=1;exp=never", 0).Err()) // rate-limit-redis's name, a session's value
	must(t, c.Set(ctx, "rl:cw:{alice}:100", 1, 0).Err())      // changes after Inspect
	must(t, c.Set(ctx, "rl:sw:{alice}:7", 2, 0).Err())
	schemas := NewRegistry(Params{}).All()
	in, err := Inspect(ctx, c, schemas, "alice")
	if err != nil {
		t.Fatal(err)
	}
	keep := []string{"rl:gcra:{alice}", "rl:alice", "rl:cw:{alice}:100"}
	gone := []string{"rl:fw:{alice}", "rl:tb:{alice}", "rl:sw:{alice}:7"}
	must(t, c.Set(ctx, "rl:cw:{alice}:100", "taken over", 0).Err())
	snap := redistest.TakeSnapshot(t, c, append(keep, "rl:tb:{bob}")...)

	dry, err := Reset(ctx, c, in.Keys, true)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, gone...).Result(); n != int64(len(gone)) {
		t.Fatalf("dry run deleted keys: %d of %d left", n, len(gone))
	}
	res, err := Reset(ctx, c, in.Keys, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []ResetResult{dry, res} {
		slices.Sort(r.Deleted)
		slices.Sort(r.LeftAlone)
		if !slices.Equal(r.Deleted, sorted(gone)) || !slices.Equal(r.LeftAlone, sorted(keep)) {
			t.Errorf("deleted %v, left alone %v; want %v and %v", r.Deleted, r.LeftAlone, sorted(gone), sorted(keep))
		}
	}
	if n, _ := c.Exists(ctx, gone...).Result(); n != 0 {
		t.Errorf("%d of %v left", n, gone)
	}
	snap.AssertUnchanged(t, c)
}

// TestResetOnCluster: keys of one identity in several slots are reset by
// one script per slot, each fitting key deleted and the others left; the
// keys counted for progress are those of every primary.
func TestResetOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	// Upstash windows of one identity: no hash tag, so different slots.
	var keys []string
	for _, w := range []string{"100", "101", "102", "103"} {
		k := "@upstash/ratelimit:u:" + w
		must(t, c.Set(ctx, k, 1, 0).Err())
		keys = append(keys, k)
	}
	must(t, c.Set(ctx, "@upstash/ratelimit:u:104", "plain", 0).Err())
	// The keys sit on several primaries; CountKeys adds up every one.
	if n, err := CountKeys(ctx, c); err != nil || n != 5 {
		t.Errorf("CountKeys = %d, %v; want the 5 keys written", n, err)
	}
	in, err := Inspect(ctx, c, NewRegistry(Params{}).All(), "u")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Reset(ctx, c, in.Keys, false)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Deleted)
	if !slices.Equal(res.Deleted, keys) || !slices.Equal(res.LeftAlone, []string{"@upstash/ratelimit:u:104"}) {
		t.Fatalf("%+v", res)
	}
	for _, k := range keys {
		if c.Exists(ctx, k).Val() != 0 {
			t.Errorf("%s not deleted", k)
		}
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestPlanResetTouchesNothingUntilApplied: a plan lists the identity's
// fitting keys and the lookalikes it leaves alone, deleting nothing; Apply
// deletes only the planned keys that still fit, so one taken over between
// the plan and the delete stays. An argument naming another application's
// key plans nothing, and applying that plan deletes nothing.
func TestPlanResetTouchesNothingUntilApplied(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	must(t, c.Set(ctx, "rl:fw:{carol}", 3, 0).Err())
	must(t, c.Set(ctx, "rl:sw:{carol}:7", 2, 0).Err())
	must(t, c.Set(ctx, "rl:gcra:{carol}", "soon", 0).Err()) // not a TAT
	must(t, c.Set(ctx, "app:session", "42", 0).Err())
	schemas := NewRegistry(Params{}).All()
	snap := redistest.TakeSnapshot(t, c, "rl:fw:{carol}", "rl:sw:{carol}:7", "rl:gcra:{carol}", "app:session")

	plan, err := PlanReset(ctx, c, schemas, "carol")
	if err != nil {
		t.Fatal(err)
	}
	snap.AssertUnchanged(t, c)
	want := []string{"rl:fw:{carol}", "rl:sw:{carol}:7"}
	if !slices.Equal(sorted(plan.Keys), want) || !slices.Equal(plan.LeftAlone, []string{"rl:gcra:{carol}"}) {
		t.Fatalf("plan: keys %v, left alone %v; want %v and [rl:gcra:{carol}]", plan.Keys, plan.LeftAlone, want)
	}
	must(t, c.Set(ctx, "rl:sw:{carol}:7", "taken over", 0).Err())
	res, err := plan.Apply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, []string{"rl:fw:{carol}"}) || !slices.Equal(res.LeftAlone, []string{"rl:sw:{carol}:7"}) {
		t.Errorf("apply: deleted %v, left alone %v; want [rl:fw:{carol}] and [rl:sw:{carol}:7]", res.Deleted, res.LeftAlone)
	}
	if v, _ := c.Get(ctx, "rl:sw:{carol}:7").Result(); v != "taken over" {
		t.Errorf("a key taken over after the plan holds %q", v)
	}

	other, err := PlanReset(ctx, c, schemas, "app:session")
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Keys) != 0 || len(other.LeftAlone) != 0 {
		t.Errorf("another application's key planned: keys %v, left alone %v", other.Keys, other.LeftAlone)
	}
	if res, err := other.Apply(ctx); err != nil || len(res.Deleted) != 0 {
		t.Errorf("applying an empty plan: %+v, %v", res, err)
	}
	if v, _ := c.Get(ctx, "app:session").Result(); v != "42" {
		t.Errorf("app:session holds %q after its empty plan was applied", v)
	}
}
