package keyspace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redistest"
)

// restricted starts a Redis holding rl: limiter keys (ann's with a TTL,
// bob's without), go-redis-rate keys (rate:ann, rate:{carl}) and an
// application key, and returns an admin client and a client of a user
// limited by rules.
func restricted(t *testing.T, rules ...string) (admin, user *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	admin = srv.Client(t)
	ctx := context.Background()
	must(t, admin.Set(ctx, "rl:fw:{ann}", 5, time.Minute).Err())
	must(t, admin.Set(ctx, "rl:fw:{bob}", 3, 0).Err())
	must(t, admin.Set(ctx, "rate:ann", 1764000000000, time.Minute).Err())
	must(t, admin.Set(ctx, "rate:{carl}", 1764000000000, 0).Err())
	must(t, admin.Set(ctx, "app:session", "x", 0).Err())
	name, pw := redistest.RestrictedUser(t, srv, "limited", rules...)
	user = redis.NewClient(&redis.Options{Addr: srv.Addr, Username: name, Password: pw, DisableIdentity: true})
	t.Cleanup(func() { user.Close() })
	return admin, user
}

// denial asserts err is a *PermissionError (exit 3) naming want and the
// permission perm.
func denial(t *testing.T, err error, perm string, want ...string) {
	t.Helper()
	var pe *PermissionError
	if !errors.As(err, &pe) || exitcode.Of(err) != exitcode.Unreachable {
		t.Fatalf("err %v (exit %d), want a PermissionError, exit 3", err, exitcode.Of(err))
	}
	slices.Sort(pe.Sample)
	if !slices.Equal(pe.Sample, want) || pe.Count != int64(len(want)) || !strings.Contains(err.Error(), "no permission to "+perm) {
		t.Fatalf("err %v: want it to name %v and the %s permission", err, want, perm)
	}
}

// TestRestrictedUserInspectsAndResetsWhatItMayRead: a user limited to
// ~rl:* inspects and resets an identity's rl: keys; the identity's key
// it may not read (rate:ann) is named as left out (exit 3) and left
// alone; names of layouts that hold nothing for the identity are no
// denial, and neither is anything once --schema narrows to rl: layouts.
func TestRestrictedUserInspectsAndResetsWhatItMayRead(t *testing.T) {
	t.Parallel()
	admin, c := restricted(t, "~rl:*", "+@all")
	ctx := context.Background()
	all := NewRegistry(Params{Limit: auditLimit}).All()
	in, err := Inspect(ctx, c, all, "ann")
	denial(t, err, "read", "rate:ann")
	if len(in.Keys) != 1 || in.Keys[0].Key != "rl:fw:{ann}" || !slices.Equal(in.Denied, []string{"rate:ann"}) {
		t.Fatalf("inspect ann: keys %v, denied %v; want rl:fw:{ann} read, rate:ann denied", in.Keys, in.Denied)
	}
	if in, err := Inspect(ctx, c, all, "dora"); err != nil || len(in.Keys) != 0 {
		t.Fatalf("inspect dora, who has no keys: %v, %v; want nothing and no error", in.Keys, err)
	}
	own, err := NewRegistry(Params{Limit: auditLimit}).Select("redis-fixed-window")
	if err != nil {
		t.Fatal(err)
	}
	if in, err := Inspect(ctx, c, own, "ann"); err != nil || len(in.Keys) != 1 {
		t.Fatalf("inspect ann under redis-fixed-window: %v, %v; want its key, no error", in.Keys, err)
	}
	plan, err := PlanReset(ctx, c, all, "ann")
	denial(t, err, "read", "rate:ann")
	done, err := plan.Apply(ctx)
	if err != nil || !slices.Equal(done.Deleted, []string{"rl:fw:{ann}"}) {
		t.Fatalf("reset ann: %+v, %v; want rl:fw:{ann} deleted", done, err)
	}
	if n := admin.Exists(ctx, "rl:fw:{ann}", "rate:ann").Val(); n != 1 || admin.Exists(ctx, "rate:ann").Val() != 1 {
		t.Fatalf("after the reset %d of rl:fw:{ann}, rate:ann exist; want rate:ann alone", n)
	}
}

// TestRestrictedUserRepairsWhatItMay: repair-ttl by a user limited to
// ~rl:* repairs the rl: key without TTL and names the limiter keys it may
// not read (exit 3), leaving them as they were; one that may read
// everything but change only nothing (%R~*) names the key it could not
// repair and the write permission.
func TestRestrictedUserRepairsWhatItMay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	all := NewRegistry(Params{Limit: auditLimit}).All()
	t.Run("~rl:*", func(t *testing.T) {
		t.Parallel()
		admin, c := restricted(t, "~rl:*", "+@all")
		st, err := RepairTTL(ctx, c, RepairOptions{Schemas: all})
		denial(t, err, "read", "rate:ann", "rate:{carl}")
		if st.Repaired != 1 || st.Denied != 2 || admin.PTTL(ctx, "rl:fw:{bob}").Val() <= 0 || admin.PTTL(ctx, "rate:{carl}").Val() != -1 {
			t.Fatalf("stats %+v: want rl:fw:{bob} repaired, 2 denied, rate:{carl} untouched", st)
		}
	})
	t.Run("%R~*", func(t *testing.T) {
		t.Parallel()
		admin, c := restricted(t, "%R~*", "+@all")
		st, err := RepairTTL(ctx, c, RepairOptions{Schemas: all})
		denial(t, err, "write", "rate:{carl}", "rl:fw:{bob}")
		if st.Repaired != 0 || admin.PTTL(ctx, "rl:fw:{bob}").Val() != -1 {
			t.Fatalf("stats %+v: want nothing repaired", st)
		}
	})
}

// TestRestrictedUserAudits: an audit by a user limited to ~rl:* checks the
// rl: keys (bob's lack of a TTL fails) and names the limiter keys it could
// not read (exit 3).
func TestRestrictedUserAudits(t *testing.T) {
	t.Parallel()
	_, c := restricted(t, "~rl:*", "+@all")
	rep, err := Audit(context.Background(), c, auditOpts())
	if err != nil {
		t.Fatal(err)
	}
	denial(t, rep.Err(), "read", "rate:ann", "rate:{carl}")
	if rep.BySchema["redis-fixed-window"] != 2 || rep.Scanned != 5 || !slices.Equal(sampleOf(rep, CheckNoTTL), []string{"rl:fw:{bob}"}) {
		t.Fatalf("by schema %v, scanned %d, no-ttl %v; want the 2 rl: keys audited of 5, bob's without TTL", rep.BySchema, rep.Scanned, sampleOf(rep, CheckNoTTL))
	}
	if !slices.Equal(sampleOf(rep, CheckAccess), []string{"rate:ann", "rate:{carl}"}) {
		t.Fatalf("access finding %v", sampleOf(rep, CheckAccess))
	}
}

// TestAuditNamesOutOfMemory: a Redis past maxmemory under noeviction
// fails the memory check, naming OOM, and the audit writes nothing.
func TestAuditNamesOutOfMemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	redistest.FillPastMaxmemory(t, srv)
	before := c.DBSize(context.Background()).Val()
	rep, err := Audit(context.Background(), c, auditOpts())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Check == CheckMemory && (f.Severity != Fail || !strings.Contains(f.Message, "out of memory (OOM)")) {
			t.Fatalf("memory finding %+v, want a fail naming OOM", f)
		}
	}
	if messageOf(rep, CheckMemory) == "" {
		t.Fatal("no memory finding")
	}
	if after := c.DBSize(context.Background()).Val(); after != before {
		t.Fatalf("the audit wrote: %d keys before, %d after", before, after)
	}
}
