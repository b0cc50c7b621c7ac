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
// one script per slot, each fitting key deleted and the others left.
func TestResetOnCluster(t *testing.T) {
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
