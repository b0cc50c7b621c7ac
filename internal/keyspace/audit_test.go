package keyspace

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

var auditLimit = rate.Limit{Count: 100, Window: time.Minute}

func auditOpts() AuditOptions {
	return AuditOptions{
		Schemas:         NewRegistry(Params{Limit: auditLimit}).All(),
		RefreshInterval: 400 * time.Millisecond,
		BigKeyEntries:   100,
		LatencyProbes:   20,
		// Loopback on a busy test machine: only a broken server is this slow.
		LatencyWarn: 500 * time.Millisecond,
	}
}

// startClean starts a redis-server configured the way a limiter's Redis
// should be: a password, and persistence.
func startClean(t *testing.T) *redis.Client {
	d := redistest.Spawn(t, redisconn.SpawnOptions{Password: "s3cret", Args: []string{"--appendonly", "yes"}})
	c := redis.NewClient(&redis.Options{Addr: d.Servers[0].Addr, Password: "s3cret"})
	t.Cleanup(func() { c.Close() })
	return c
}

// plantHealthy writes limiter keys with nothing wrong with them.
func plantHealthy(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("ok%d", i)
		must(t, c.Set(ctx, "rl:fw:{"+id+"}", i, 50*time.Second).Err())
		must(t, c.HSet(ctx, "rl:tb:{"+id+"}", "tokens", "50", "ts", time.Now().UnixMilli()).Err())
		must(t, c.Expire(ctx, "rl:tb:{"+id+"}", 30*time.Second).Err())
	}
	must(t, c.Set(ctx, "app:config", "x", 0).Err()) // not a limiter key
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// refresher pushes a key's TTL out every 50ms, as the
// fixed-window-refresh bug does under steady traffic, until the test ends.
func refresher(t *testing.T, c redis.UniversalClient, key string) {
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 400; i++ { // bounded: at most 20s
			select {
			case <-stop:
				return
			case <-tick.C:
				ctx := context.Background()
				c.Incr(ctx, key)
				c.Expire(ctx, key, time.Minute)
			}
		}
	}()
}

// plantProblems writes one of each key problem and returns the checks
// that must fail or warn because of them.
func plantProblems(t *testing.T, c redis.UniversalClient) map[string]Severity {
	t.Helper()
	ctx := context.Background()
	must(t, c.Set(ctx, "rl:gi:{p1}", 3, 0).Err())               // no TTL
	must(t, c.Set(ctx, "rl:fw:{p2}", 3, time.Hour).Err())       // TTL far beyond W
	must(t, c.Set(ctx, "rl:fwr:{p3}", 1, time.Minute).Err())    // refreshed below
	must(t, c.Set(ctx, "rl:fw:{p4}", 95, 30*time.Second).Err()) // hot: 95 of 100
	for i := 0; i < 150; i++ {                                  // big log
		must(t, c.ZAdd(ctx, "rl:sl:{p5}", redis.Z{Score: float64(time.Now().UnixMilli()), Member: i}).Err())
	}
	must(t, c.Expire(ctx, "rl:sl:{p5}", time.Minute).Err())
	refresher(t, c, "rl:fwr:{p3}")
	return map[string]Severity{
		CheckNoTTL: Fail, CheckTTLTooLong: Fail, CheckTTLRefresh: Fail, CheckHot: Warn, CheckBigKeys: Warn,
	}
}

// checkFindings asserts every check is reported once, and that the
// non-ok ones are exactly want.
func checkFindings(t *testing.T, rep *AuditReport, want map[string]Severity) {
	t.Helper()
	seen := map[string]int{}
	got := map[string]Severity{}
	for _, f := range rep.Findings {
		seen[f.Check]++
		if f.Severity != OK {
			got[f.Check] = f.Severity
		}
	}
	for check, n := range seen {
		if n != 1 {
			t.Errorf("check %s reported %d times", check, n)
		}
	}
	var msgs []string
	for _, f := range rep.Findings {
		msgs = append(msgs, fmt.Sprintf("%s %s: %s %v", f.Severity, f.Check, f.Message, f.Sample))
	}
	for check, sev := range want {
		if got[check] != sev {
			t.Errorf("check %s: got %q, want %q", check, got[check], sev)
		}
	}
	for check, sev := range got {
		if _, ok := want[check]; !ok {
			t.Errorf("unexpected %s finding %s", sev, check)
		}
	}
	wantFailed := false
	for _, s := range want {
		wantFailed = wantFailed || s == Fail
	}
	if rep.Failed != wantFailed {
		t.Errorf("failed = %v, want %v", rep.Failed, wantFailed)
	}
	if t.Failed() {
		t.Logf("findings:\n%s", strings.Join(msgs, "\n"))
	}
}

func sampleOf(rep *AuditReport, check string) []string {
	for _, f := range rep.Findings {
		if f.Check == check {
			s := append([]string(nil), f.Sample...)
			sort.Strings(s)
			return s
		}
	}
	return nil
}

func messageOf(rep *AuditReport, check string) string {
	for _, f := range rep.Findings {
		if f.Check == check {
			return f.Message
		}
	}
	return ""
}

func TestAuditCleanStandalone(t *testing.T) {
	t.Parallel()
	c := startClean(t)
	plantHealthy(t, c)
	rep, err := Audit(context.Background(), c, auditOpts())
	if err != nil {
		t.Fatal(err)
	}
	checkFindings(t, rep, map[string]Severity{})
	if rep.BySchema["redis-fixed-window"] != 20 || rep.BySchema["redis-token-bucket"] != 20 || rep.Scanned != 41 {
		t.Errorf("counts %v scanned %d", rep.BySchema, rep.Scanned)
	}
}

// stallAfterSample is a client hook that stalls this process after the
// answer to the refresh check's second sample (the second pipeline that
// reads a key's PTTL and then its value), before the caller reads its
// clock: what a busy machine does to an audit.
type stallAfterSample struct {
	stall time.Duration
	seen  atomic.Int32
}

func (h *stallAfterSample) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *stallAfterSample) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *stallAfterSample) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		sample := false
		for i := 0; i+1 < len(cmds); i++ {
			sample = sample || (cmds[i].Name() == "pttl" && cmds[i+1].Name() == "get")
		}
		if sample && h.seen.Add(1) == 2 {
			time.Sleep(h.stall)
		}
		return err
	}
}

// A stall of the auditing process between the server's answer and the
// reading of the clock is not time the TTLs counted down: an untouched
// key sampled across it is not reported as refreshed. The elapsed time is
// the server's (TIME in each sample's pipeline).
func TestAuditRefreshCheckIgnoresItsOwnStall(t *testing.T) {
	t.Parallel()
	c := startClean(t)
	plantHealthy(t, c)
	opts := auditOpts()
	opts.RefreshInterval = 100 * time.Millisecond
	hook := &stallAfterSample{stall: 600 * time.Millisecond}
	c.AddHook(hook)
	rep, err := Audit(context.Background(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := hook.seen.Load(); n != 2 {
		t.Fatalf("%d sampling pipelines; want two", n)
	}
	checkFindings(t, rep, map[string]Severity{})
}

func TestAuditPreparedStandalone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // no password, no persistence: both planted
	c := srv.Client(t)
	ctx := context.Background()
	plantHealthy(t, c)
	want := plantProblems(t, c)
	must(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	must(t, c.ConfigSet(ctx, "protected-mode", "no").Err())
	want[CheckEviction] = Fail
	want[CheckAuth] = Fail
	want[CheckDurability] = Warn
	want[CheckProtected] = Warn

	rep, err := Audit(ctx, c, auditOpts())
	if err != nil {
		t.Fatal(err)
	}
	checkFindings(t, rep, want)
	for check, key := range map[string]string{
		CheckNoTTL: "rl:gi:{p1}", CheckTTLTooLong: "rl:fw:{p2}", CheckTTLRefresh: "rl:fwr:{p3}",
	} {
		if s := sampleOf(rep, check); len(s) != 1 || s[0] != key {
			t.Errorf("%s sample %v, want [%s]", check, s, key)
		}
	}
	// One key of each problem is planted: the messages speak of one.
	for check, start := range map[string]string{
		CheckNoTTL: "1 limiter key has no TTL", CheckTTLTooLong: "1 limiter key has a TTL longer",
		CheckHot: "1 limiter counter at 90% of their limit", CheckBigKeys: "1 sliding log above 100 entries",
	} {
		if m := messageOf(rep, check); !strings.HasPrefix(m, start) {
			t.Errorf("%s message %q, want it to start %q", check, m, start)
		}
	}
	// allkeys-lru is planted; LFU frequencies only show under an LFU policy.
	if s := sampleOf(rep, CheckHot); len(s) != 1 || s[0] != "rl:fw:{p4} (95 of 100)" {
		t.Errorf("hot sample %v", s)
	}
	must(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu").Err())
	rep, err = Audit(ctx, c, auditOpts())
	if err != nil {
		t.Fatal(err)
	}
	if s := sampleOf(rep, CheckHot); len(s) != 1 || !strings.HasPrefix(s[0], "rl:fw:{p4} (95 of 100), LFU frequency ") {
		t.Errorf("hot sample under LFU %v", s)
	}
	if s := sampleOf(rep, CheckBigKeys); len(s) != 1 || !strings.HasPrefix(s[0], "rl:sl:{p5} (150 entries, ") || !strings.HasSuffix(s[0], "KB)") {
		t.Errorf("big sample %v", s)
	}
}

func TestAuditCeiling(t *testing.T) {
	t.Parallel()
	c := startClean(t)
	plantHealthy(t, c)
	o := auditOpts()
	o.Published, o.Gateways, o.Algorithm = auditLimit, 50, design.LocalFixedWindow
	rep, err := Audit(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ceiling == nil || rep.Ceiling.True != 2*100*50 {
		t.Fatalf("ceiling %+v", rep.Ceiling)
	}
	checkFindings(t, rep, map[string]Severity{CheckCeiling: Warn})
}

func TestAuditPreparedCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	plantHealthy(t, c)
	want := plantProblems(t, c)
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err()
	})
	must(t, err)
	// Upstash's sliding window reads the current and previous window's
	// keys in one script; without a hash tag they sit in different slots.
	var cur, prev string
	for b := int64(1000); ; b++ {
		cur, prev = fmt.Sprintf("@upstash/ratelimit:x:%d", b), fmt.Sprintf("@upstash/ratelimit:x:%d", b-1)
		if Slot(cur) != Slot(prev) {
			break
		}
	}
	must(t, c.Set(ctx, cur, 1, 30*time.Second).Err())
	must(t, c.Set(ctx, prev, 1, 30*time.Second).Err())
	want[CheckEviction] = Warn
	want[CheckAuth] = Fail
	want[CheckDurability] = Warn
	want[CheckCrossSlot] = Fail

	rep, err := Audit(ctx, c, auditOpts())
	if err != nil {
		t.Fatal(err)
	}
	checkFindings(t, rep, want)
	if len(rep.Shards) != 3 {
		t.Fatalf("shards %+v", rep.Shards)
	}
	var total int64
	for _, s := range rep.Shards {
		total += s.LimiterKeys
	}
	// 40 healthy, 5 planted, 2 Upstash.
	if total != 47 {
		t.Errorf("limiter keys over shards %d, want 47", total)
	}
	if s := sampleOf(rep, CheckCrossSlot); len(s) != 1 || s[0] != "x (upstash-window)" {
		t.Errorf("crossslot sample %v", s)
	}
}

func TestTrueCeiling(t *testing.T) {
	t.Parallel()
	l := rate.Limit{Count: 100, Window: time.Minute}
	tests := []struct {
		alg      string
		gateways int
		lease    int64
		want     int64
	}{
		{design.LocalFixedWindow, 50, 0, 10000},
		{design.LocalTokenBucket, 2, 0, 398},
		{design.RedisFixedWindow, 50, 0, 200},
		{design.RedisTokenBucket, 50, 0, 199},
		{design.RedisSlidingLog, 50, 0, 100},
		{design.RedisGetIncr, 10, 0, 218},
		{design.Leasing, 10, 20, 400},
	}
	for _, tt := range tests {
		t.Run(tt.alg, func(t *testing.T) {
			c, err := TrueCeiling(tt.alg, l, tt.gateways, tt.lease)
			if err != nil {
				t.Fatal(err)
			}
			if c.True != tt.want {
				t.Errorf("true ceiling %d, want %d (%s)", c.True, tt.want, c.Why)
			}
		})
	}
	if _, err := TrueCeiling("nope", l, 1, 0); err == nil {
		t.Error("unknown algorithm accepted")
	}
}

// An Upstash token bucket of "user:42" and a multi-region window of "user"
// share a name shape and a type; an audit reads neither's fields, so a TTL
// is too long only when it is too long for both layouts, and a missing TTL
// (older multi-region scripts never set one) is found either way.
func TestAuditUpstashLayoutsSharingNames(t *testing.T) {
	t.Parallel()
	c := startClean(t)
	ctx := context.Background()
	opts := auditOpts()
	// 100/min with a 500-token bucket: a bucket's TTL may reach 5 min, a
	// window's 2 min + 1 s.
	opts.Schemas = NewRegistry(Params{Limit: auditLimit, Burst: 500}).All()
	now := time.Now().UnixMilli()
	bucket := func(key string, ttl time.Duration) {
		must(t, c.HSet(ctx, key, "refilledAt", now, "tokens", 10).Err())
		must(t, c.PExpire(ctx, key, ttl).Err())
	}
	bucket("@upstash/ratelimit:user:42", 4*time.Minute)  // fine for a bucket
	bucket("@upstash/ratelimit:user:43", 10*time.Minute) // too long for both
	win := fmt.Sprintf("@upstash/ratelimit:noa:%d", now/60000)
	must(t, c.HSet(ctx, win, "3fZq8bLkP0aX1cVt", 1, "Hh27PqLmZx9sW0aE", 1).Err())
	must(t, c.PExpire(ctx, win, 2*time.Minute+time.Second).Err())
	old := fmt.Sprintf("@upstash/ratelimit:ivy:%d", now/60000)
	must(t, c.HSet(ctx, old, "Qa81ZmXcVb0nLkJh", 1).Err()) // no TTL

	rep, err := Audit(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkFindings(t, rep, map[string]Severity{CheckNoTTL: Fail, CheckTTLTooLong: Fail})
	if s := sampleOf(rep, CheckTTLTooLong); len(s) != 1 || s[0] != "@upstash/ratelimit:user:43" {
		t.Errorf("TTL too long: %v, want only the 10-minute bucket", s)
	}
	if s := sampleOf(rep, CheckNoTTL); len(s) != 1 || s[0] != old {
		t.Errorf("no TTL: %v, want [%s]", s, old)
	}
}

// rate-limiter-flexible blocks a consumer by rewriting its key with the
// block's expiry, longer than the window and recorded nowhere: an audit
// must not call that TTL too long, yet still finds a key with none.
func TestAuditFlexibleBlockedKeys(t *testing.T) {
	t.Parallel()
	c := startClean(t)
	ctx := context.Background()
	opts := auditOpts()
	opts.Schemas = NewRegistry(Params{Limit: auditLimit}).All()
	must(t, c.Set(ctx, "rlflx:ok", 3, auditLimit.Window).Err())
	must(t, c.Set(ctx, "rlflx:blocked", auditLimit.Count+1, time.Hour).Err()) // blockDuration 1h
	must(t, c.Set(ctx, "rlflx:lost", 5, 0).Err())
	rep, err := Audit(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The blocked consumer is over its limit: a hot identity, rightly.
	checkFindings(t, rep, map[string]Severity{CheckNoTTL: Fail, CheckHot: Warn})
	if s := sampleOf(rep, CheckNoTTL); len(s) != 1 || s[0] != "rlflx:lost" {
		t.Errorf("no TTL: %v, want [rlflx:lost]", s)
	}
}

// The Python limits library names each key's limit and window, so an
// audit needs no --limit to find a TTL longer than the window, or none.
func TestAuditPythonLimitsWithoutLimit(t *testing.T) {
	t.Parallel()
	c := startClean(t)
	ctx := context.Background()
	opts := auditOpts()
	opts.Schemas = NewRegistry(Params{}).All()
	must(t, c.Set(ctx, "LIMITS:LIMITER/192.0.2.1/100/1/minute", 3, time.Minute).Err())
	must(t, c.Set(ctx, "LIMITS:{LIMITER/192.0.2.1/5/30/second}", 1, time.Minute).Err()) // 2W: fine
	must(t, c.Set(ctx, "LIMITS:LIMITER/192.0.2.2/100/1/minute", 3, 10*time.Minute).Err())
	must(t, c.Set(ctx, "LIMITS:LIMITER/192.0.2.3/100/1/minute", 3, 0).Err())
	must(t, c.Set(ctx, "LIMITS:LIMITER/192.0.2.4/10/1/minute", 10, time.Minute).Err()) // at its limit
	// Moving windows are lists: one fine, one that lost its TTL.
	must(t, c.RPush(ctx, "LIMITS:LIMITER/192.0.2.5/10/1/minute", "1795990000.5").Err())
	must(t, c.Expire(ctx, "LIMITS:LIMITER/192.0.2.5/10/1/minute", time.Minute).Err())
	must(t, c.RPush(ctx, "LIMITS:LIMITER/192.0.2.6/10/1/minute", "1795990000.5").Err())
	rep, err := Audit(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkFindings(t, rep, map[string]Severity{CheckNoTTL: Fail, CheckTTLTooLong: Fail, CheckHot: Warn})
	if s := sampleOf(rep, CheckHot); len(s) != 1 || !strings.Contains(s[0], "192.0.2.4") {
		t.Errorf("hot: %v; want the key at its own limit of 10", s)
	}
	if s := sampleOf(rep, CheckTTLTooLong); len(s) != 1 || s[0] != "LIMITS:LIMITER/192.0.2.2/100/1/minute" {
		t.Errorf("TTL too long: %v", s)
	}
	if s := sampleOf(rep, CheckNoTTL); !slices.Equal(slices.Sorted(slices.Values(s)), []string{"LIMITS:LIMITER/192.0.2.3/100/1/minute", "LIMITS:LIMITER/192.0.2.6/10/1/minute"}) {
		t.Errorf("no TTL: %v", s)
	}
	if n := rep.BySchema[SchemaPythonLimits]; n != 7 {
		t.Errorf("%d keys read as %s, want all 7 (lists too)", n, SchemaPythonLimits)
	}
}

// TestAuditCountsEveryHotAndBigKey: the findings count every hot counter
// and big log, not the length of their bounded samples.
func TestAuditCountsEveryHotAndBigKey(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	const hot, big = 27, 13
	for i := 0; i < hot; i++ {
		must(t, c.Set(ctx, fmt.Sprintf("rl:fw:{h%d}", i), 90+i%10, time.Minute).Err())
	}
	for i := 0; i < 40; i++ { // not hot
		must(t, c.Set(ctx, fmt.Sprintf("rl:fw:{c%d}", i), 10, time.Minute).Err())
	}
	for i := 0; i < big; i++ {
		k := fmt.Sprintf("rl:sl:{b%d}", i)
		for j := 0; j < 101+i; j++ {
			must(t, c.ZAdd(ctx, k, redis.Z{Score: float64(time.Now().UnixMilli()), Member: j}).Err())
		}
		must(t, c.Expire(ctx, k, time.Minute).Err())
	}
	opts := auditOpts()
	opts.SampleSize = 5
	rep, err := Audit(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		check string
		count int64
	}{{CheckHot, hot}, {CheckBigKeys, big}} {
		for _, f := range rep.Findings {
			if f.Check != want.check {
				continue
			}
			if f.Count != want.count || len(f.Sample) != 5 || !strings.HasPrefix(f.Message, fmt.Sprint(want.count)+" ") {
				t.Errorf("%s: count %d, %d sampled, %q; want %d counted and 5 sampled", f.Check, f.Count, len(f.Sample), f.Message, want.count)
			}
		}
	}
}

// TestAuditLeavesOtherApplicationsKeysOut: on a healthy deployment whose
// Redis also holds another application's keys under limiter-like names
// (no TTL, a long TTL, a session whose TTL slides on every access), audit
// fails nothing: those keys are named in a warning, not counted as
// limiter keys.
func TestAuditLeavesOtherApplicationsKeysOut(t *testing.T) {
	t.Parallel()
	c := startClean(t)
	plantHealthy(t, c)
	foreign := redistest.SeedForeign(t, c)
	must(t, c.Set(context.Background(), "rl:sessions:live", "token", time.Minute).Err())
	refresher(t, c, "rl:sessions:live")
	rep, err := Audit(context.Background(), c, auditOpts())
	if err != nil {
		t.Fatal(err)
	}
	checkFindings(t, rep, map[string]Severity{CheckLookalikes: Warn})
	if s := sampleOf(rep, CheckLookalikes); !slices.Contains(s, "rl:fw:notlimiter") || !slices.Contains(s, "rl:sessions:abc") {
		t.Errorf("lookalikes %v", s)
	}
	// Only keys that would fail the audit have their values checked: the
	// live session, whose TTL is fine, still counts as rate-limit-redis's.
	if rep.BySchema["redis-fixed-window"] != 20 || rep.BySchema["redis-token-bucket"] != 20 || rep.BySchema["redis-gcra"] != 0 {
		t.Errorf("limiter keys %v, want the 20 + 20 planted", rep.BySchema)
	}
	foreign.AssertUnchanged(t, c)
}
