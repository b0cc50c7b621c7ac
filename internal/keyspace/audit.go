package keyspace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/textfmt"
)

// Severity grades a finding.
type Severity string

// Severities, from fine to broken. Any fail makes `rlctl audit` exit 1.
const (
	OK   Severity = "ok"
	Warn Severity = "warn"
	Fail Severity = "fail"
)

// Check names, in report order. They are stable: scripts grep for them.
const (
	CheckLimiterKeys = "limiter-keys"
	CheckLookalikes  = "lookalike-keys"
	CheckNoTTL       = "no-ttl"
	CheckTTLTooLong  = "ttl-too-long"
	CheckTTLRefresh  = "ttl-refresh"
	CheckHot         = "hot-identities"
	CheckBigKeys     = "big-keys"
	CheckEviction    = "eviction-policy"
	CheckMemory      = "memory"
	CheckDurability  = "durability"
	CheckShards      = "shards"
	CheckCrossSlot   = "crossslot"
	CheckClock       = "clock"
	CheckLatency     = "latency"
	CheckAuth        = "auth"
	CheckProtected   = "protected-mode"
	CheckCeiling     = "ceiling"
	CheckAccess      = "access"
)

// Finding is one audit result. The JSON form is stable.
type Finding struct {
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Count is how many keys (or nodes) the finding is about, when it
	// counts something.
	Count int64 `json:"count,omitempty"`
	// Sample names some of them (bounded).
	Sample []string `json:"sample,omitempty"`
}

// AuditOptions tune the audit. Zero values take the defaults shown.
type AuditOptions struct {
	Schemas []*Schema
	// RefreshInterval separates the two TTL samples that reveal a TTL
	// refreshed on every request (1s).
	RefreshInterval time.Duration
	// RefreshSample bounds the keys sampled for that check, per primary (200).
	RefreshSample int
	// SampleSize bounds the key names kept per finding (10).
	SampleSize int
	// BigKeyEntries flags logs with more entries (10000).
	BigKeyEntries int64
	// HotRatio flags identities at or above this share of their limit (0.9).
	HotRatio float64
	// LatencyProbes is the number of PINGs timed (100).
	LatencyProbes int
	// LatencyWarn flags a p99 round trip above it (25ms).
	LatencyWarn time.Duration
	// ClockWarn flags a clock difference above it (1s).
	ClockWarn time.Duration
	// LocalNow is this machine's clock (time.Now).
	LocalNow func() time.Time
	// Published, Gateways, Algorithm and Lease add the design's true
	// ceiling beside the published one when Published is set.
	Published rate.Limit
	Gateways  int
	Algorithm string
	Lease     int64
}

func (o *AuditOptions) defaults() {
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = time.Second
	}
	if o.RefreshSample <= 0 {
		o.RefreshSample = 200
	}
	if o.SampleSize <= 0 {
		o.SampleSize = 10
	}
	if o.BigKeyEntries <= 0 {
		o.BigKeyEntries = 10000
	}
	if o.HotRatio <= 0 {
		o.HotRatio = 0.9
	}
	if o.LatencyProbes <= 0 {
		o.LatencyProbes = 100
	}
	if o.LatencyWarn <= 0 {
		o.LatencyWarn = 25 * time.Millisecond
	}
	if o.ClockWarn <= 0 {
		o.ClockWarn = time.Second
	}
	if o.LocalNow == nil {
		o.LocalNow = time.Now
	}
}

// ShardStats is one primary's share of the limiter keys.
type ShardStats struct {
	Node        string `json:"node"`
	Keys        int64  `json:"keys"`
	LimiterKeys int64  `json:"limiter_keys"`
	OpsPerSec   int64  `json:"ops_per_sec"`
}

// Latency are round-trip percentiles of PING, in milliseconds.
type Latency struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// AuditReport is the outcome of an audit. The JSON form is stable.
type AuditReport struct {
	Failed   bool             `json:"failed"`
	Findings []Finding        `json:"findings"`
	Scanned  int64            `json:"scanned"`
	BySchema map[string]int64 `json:"limiter_keys"`
	Shards   []ShardStats     `json:"shards"`
	Latency  Latency          `json:"latency"`
	Ceiling  *Ceiling         `json:"ceiling,omitempty"`
	// Denied counts limiter keys the connected ACL user may not read: left
	// out of every check (see Err).
	Denied int64 `json:"denied_keys"`

	denied denied
}

// Err is a *PermissionError when the audit had to leave keys out because
// the connected ACL user may not read them, else nil.
func (r *AuditReport) Err() error { return r.denied.err("audit", false) }

// sampler keeps at most n names.
type sampler struct {
	n     int
	count int64
	names []string
}

// add counts name and keeps it if it is among the n first by name: the
// sample is the same whatever order the pages came in.
func (s *sampler) add(name string) {
	s.count++
	i, found := slices.BinarySearch(s.names, name)
	if found || (len(s.names) == s.n && i == s.n) {
		return
	}
	if len(s.names) == s.n {
		s.names = s.names[:s.n-1]
	}
	s.names = slices.Insert(s.names, i, name)
}

type hotKey struct {
	key   string
	ratio float64
	used  int64
	limit int64
}

// refreshCand is a key sampled for the TTL refresh check, with its
// first PTTL, counter value and when they were read.
type refreshCand struct {
	key  string
	node Node
	ttl  time.Duration
	val  string
	at   sampleTime
}

// sampleTime is when a pipeline read its keys' PTTLs: by the server's
// TIME, read in the same pipeline just before them, and by this machine's
// clock once the answer came. The server's is the one the TTLs count
// down by; the local one may include a stall of this process between the
// server's answer and the reading of the clock, and stands in only where
// the server would not tell its time (a user without TIME).
type sampleTime struct {
	server time.Time // zero when TIME was refused
	local  time.Time
}

// timedPipeline starts a pipeline on n whose first command reads the
// server's time; the function it returns reads that time, with the local
// one, once the pipeline ran.
func timedPipeline(ctx context.Context, n Node) (redis.Pipeliner, func() sampleTime) {
	pipe := n.Client.Pipeline()
	tc := pipe.Time(ctx)
	return pipe, func() sampleTime {
		at := sampleTime{local: time.Now()}
		if tc.Err() == nil {
			at.server = tc.Val()
		}
		return at
	}
}

// since is the time from a to b: by the server's clock when both have it,
// else by the local one.
func (b sampleTime) since(a sampleTime) time.Duration {
	if !a.server.IsZero() && !b.server.IsZero() {
		return b.server.Sub(a.server)
	}
	return b.local.Sub(a.local)
}

// auditState is what the streaming scan keeps: counts and bounded samples,
// so memory does not grow with the keyspace.
type auditState struct {
	opts     AuditOptions
	mu       sync.Mutex
	scanned  int64
	bySchema map[string]int64
	noTTL    sampler
	tooLong  sampler
	big      []hotKey // by entries, bounded
	hot      []hotKey // by ratio, bounded
	// bigCount and hotCount count every key big or hot finds, not only
	// those the bounded samples keep.
	bigCount, hotCount int64
	refresh            []refreshCand
	firstAt            time.Time
	shards             map[string]*ShardStats
	slots              map[string]int // multi-key identity → slot (bounded)
	cross              sampler
	// lookalikes are keys a layout claims by name and type that would
	// have failed the audit (no TTL, too long a TTL) but whose value is
	// not a limiter's: another application's keys, left out.
	lookalikes sampler
	cluster    bool
	// denied are limiter keys the ACL user may not read.
	denied denied
}

const maxSlotsTracked = 100000

// auditPages is how many pages of one primary the audit reads at once:
// while one page's pipeline waits on Redis, the other's answers are
// checked. Each is one pipeline of ScanCount keys' reads, so another
// client waits behind two at most.
const auditPages = 2

// Audit makes one pass over the deployment's Redis — every primary on a
// Cluster — and reports findings. Reads are pipelined per SCAN page and
// only counts and bounded samples are kept.
func Audit(ctx context.Context, c redis.UniversalClient, opts AuditOptions) (*AuditReport, error) {
	opts.defaults()
	_, isCluster := c.(*redis.ClusterClient)
	st := &auditState{
		opts: opts, bySchema: map[string]int64{}, shards: map[string]*ShardStats{},
		noTTL: sampler{n: opts.SampleSize}, tooLong: sampler{n: opts.SampleSize},
		cross: sampler{n: opts.SampleSize}, slots: map[string]int{}, cluster: isCluster,
		lookalikes: sampler{n: opts.SampleSize},
	}
	now, err := ServerTime(ctx, c)
	if err != nil {
		return nil, err
	}
	local := opts.LocalNow()
	rep := &AuditReport{BySchema: st.bySchema}

	// Per-node configuration, then the keyspace.
	var cfgMu sync.Mutex
	var cfgs []nodeConfig
	err = ForEachPrimary(ctx, c, func(ctx context.Context, n Node) error {
		nc, err := readNodeConfig(ctx, n)
		if err != nil {
			return err
		}
		cfgMu.Lock()
		cfgs = append(cfgs, nc)
		cfgMu.Unlock()
		// Another primary's pages may be reading shards already: st.mu
		// guards it, as it does everything the pages touch.
		st.mu.Lock()
		st.shards[n.Addr] = &ShardStats{Node: n.Addr, Keys: nc.keys, OpsPerSec: nc.ops}
		st.mu.Unlock()
		return ScanNodeConcurrently(ctx, n, "*", auditPages, func(keys []string) error { return st.page(ctx, n, nc.cluster, keys) })
	})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	refreshed, err := st.checkRefresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	lat, err := measureLatency(ctx, c, opts.LatencyProbes)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	rep.Latency = lat
	rep.Scanned = st.scanned
	for _, s := range st.shards {
		rep.Shards = append(rep.Shards, *s)
	}
	sort.Slice(rep.Shards, func(i, j int) bool { return rep.Shards[i].Node < rep.Shards[j].Node })

	add := func(f Finding) {
		if f.Severity == Fail {
			rep.Failed = true
		}
		rep.Findings = append(rep.Findings, f)
	}
	rep.denied, rep.Denied = st.denied, st.denied.count
	add(st.keysFinding())
	if d := st.denied; d.count > 0 {
		add(Finding{Check: CheckAccess, Severity: Warn, Count: d.count, Sample: d.sample,
			Message: textfmt.Count(d.count, "limiter key") + " the Redis user may not read (NOPERM) left out of every check"})
	}
	add(samplerFinding(CheckLookalikes, Warn, &st.lookalikes, func(n int64) string {
		return textfmt.Count(n, "key") + " named like limiter keys, without a TTL or with too long a TTL, " + verb(n, "holds", "hold") + " what no limiter writes (a counter that is not an integer, a hash without a bucket's fields): another application shares the prefix; left out of the audit"
	},
		"no key without a TTL (or with too long a TTL) under a limiter's name holds anything but a limiter's state"))
	add(samplerFinding(CheckNoTTL, Fail, &st.noTTL, func(n int64) string {
		return textfmt.Count(n, "limiter key") + " " + verb(n, "has", "have") + " no TTL: they count forever, so those identities stay limited (or a window never rolls)"
	}, "every limiter key has a TTL"))
	add(samplerFinding(CheckTTLTooLong, Fail, &st.tooLong, func(n int64) string {
		return textfmt.Count(n, "limiter key") + " " + verb(n, "has", "have") + " a TTL longer than their schema allows: windows last longer than published"
	}, "no TTL beyond what its schema allows"))
	add(refreshed)
	hot, err := st.hotFinding(ctx, c, cfgs)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	add(hot)
	big, err := st.bigFinding(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	add(big)
	for _, f := range configFindings(cfgs) {
		add(f)
	}
	if isCluster {
		add(st.shardFinding(rep.Shards))
		add(samplerFinding(CheckCrossSlot, Fail, &st.cross, func(n int64) string {
			return textfmt.Count(n, "identity") + " of multi-key layouts " + verb(n, "has its", "have") + " keys in different slots: their scripts fail with CROSSSLOT on Cluster (use a {hash tag})"
		}, "every multi-key identity keeps its keys in one slot"))
	}
	add(clockFinding(now, local, opts.ClockWarn))
	add(latencyFinding(lat, opts.LatencyWarn))
	if !opts.Published.IsZero() && opts.Algorithm != "" {
		cl, err := TrueCeiling(opts.Algorithm, opts.Published, opts.Gateways, opts.Lease)
		if err != nil {
			return nil, err
		}
		rep.Ceiling = &cl
		sev := OK
		if cl.True > cl.Published {
			sev = Warn
		}
		add(Finding{Check: CheckCeiling, Severity: sev, Message: fmt.Sprintf("published %s, true ceiling %d per %s with %d gateways (%.2f×): %s",
			opts.Published, cl.True, human(opts.Published.Window), cl.Gateways, cl.Ratio, cl.Why)})
	}
	return rep, nil
}

func samplerFinding(check string, sev Severity, s *sampler, bad func(n int64) string, good string) Finding {
	if s.count == 0 {
		return Finding{Check: check, Severity: OK, Message: good}
	}
	return Finding{Check: check, Severity: sev, Message: bad(s.count), Count: s.count, Sample: s.names}
}

// verb is the singular or plural form as it goes with n.
func verb(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func isServerError(err error) bool {
	var re redis.Error
	return errors.Is(err, redis.Nil) || errors.As(err, &re)
}

// report is what readPage says of a key worth reporting: its type,
// PTTL, and the value or entry count that crossed a threshold (hasV).
type report struct {
	typ  string
	ttl  time.Duration
	v    int64
	hasV bool
}

type auditCand struct {
	s *Schema
	p Parsed
}

// page audits one SCAN page: names are matched here, and one pipeline
// reads their TTLs and values (see readPage).
func (st *auditState) page(ctx context.Context, n Node, clusterNode bool, names []string) error {
	var cs []auditCand
	var keys []string
	// Keys checked alike form one run, so the script gets each run's
	// checks once; a page usually holds a handful of runs.
	type check struct {
		typ        string
		maxMs, thr int64
	}
	batch := 1
	if clusterNode {
		batch = 0
	}
	var checks []check
	var runs []keyRun
	for _, k := range names {
		s, p, ok := Match(st.opts.Schemas, k, "")
		if !ok {
			continue
		}
		c := check{typ: s.Type}
		if max := s.MaxTTL(p); max > 0 {
			c.maxMs = (max + time.Second).Milliseconds()
		}
		switch s.Type {
		case TypeString:
			if lim := limitFor(s, p); lim > 0 {
				c.thr = int64(math.Ceil(st.opts.HotRatio * float64(lim)))
			}
		case TypeZSet:
			c.thr = st.opts.BigKeyEntries
		}
		r := slices.Index(checks, c)
		if r < 0 {
			r = len(checks)
			checks = append(checks, c)
			runs = append(runs, keyRun{head: []any{c.typ, c.maxMs, c.thr, batch}})
		}
		runs[r].idx = append(runs[r].idx, len(cs))
		cs = append(cs, auditCand{s, p})
		keys = append(keys, k)
	}
	if len(cs) == 0 {
		st.mu.Lock()
		st.scanned += int64(len(names))
		st.mu.Unlock()
		return nil
	}
	res, err := readPage(ctx, n, keys, runs)
	if IsNoPerm(err) {
		// The user may not read some of them: audit those it may.
		ok, no, err := splitReadable(ctx, n, keys)
		if err != nil {
			return err
		}
		if len(no) > 0 {
			st.mu.Lock()
			st.denied.add(no...)
			st.scanned += int64(len(names) - len(ok))
			st.mu.Unlock()
			return st.page(ctx, n, clusterNode, ok)
		}
	}
	if err != nil {
		return fmt.Errorf("read keys on %s: %w", n.Addr, err)
	}
	if err := st.sampleRefresh(ctx, n, cs); err != nil {
		return err
	}
	reported := map[int]report{}
	for i := 0; i+3 < len(res); i += 4 {
		idx, _ := res[i].(int64)
		typ, _ := res[i+1].(string)
		ttl, _ := res[i+2].(int64)
		r := report{typ: typ, ttl: time.Duration(ttl) * time.Millisecond}
		if ttl < 0 {
			r.ttl = time.Duration(ttl)
		}
		if v, ok := res[i+3].(int64); ok {
			r.v, r.hasV = v, true
		}
		if idx < 1 || int(idx) > len(cs) {
			return fmt.Errorf("read keys on %s: bad reply", n.Addr)
		}
		reported[int(idx)-1] = r
	}
	// A key without a TTL, or with too long a TTL, fails the audit: first
	// make sure, on the server, that it holds what its layout writes, so
	// another application's key under a limiter-like name cannot fail it.
	lookalike := map[int]bool{}
	var suspects []fitCand
	var suspectIdx []int
	for i, r := range reported {
		if r.typ == "none" || (r.ttl != -1 && !st.tooLongTTL(cs[i].p.Key, r)) {
			continue
		}
		specs := fitSpecs(st.opts.Schemas, cs[i].p.Key, r.typ)
		if len(specs) == 0 {
			continue // no layout claims it with this type: not counted below
		}
		suspects = append(suspects, fitCand{key: cs[i].p.Key, specs: specs})
		suspectIdx = append(suspectIdx, i)
	}
	if len(suspects) > 0 {
		fit, err := checkFits(ctx, n, suspects)
		if err != nil {
			return err
		}
		for j, ok := range fit {
			lookalike[suspectIdx[j]] = !ok
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.scanned += int64(len(names))
	counted := int64(0)
	for i, c := range cs {
		s, p := c.s, c.p
		r, isReported := reported[i]
		if isReported && r.typ == "none" {
			continue // gone since SCAN
		}
		if isReported && r.typ != s.Type {
			// The type decides between layouts sharing names.
			var ok bool
			if s, p, ok = Match(st.opts.Schemas, p.Key, r.typ); !ok {
				continue
			}
		}
		if lookalike[i] {
			st.lookalikes.add(p.Key)
			continue
		}
		counted++
		st.bySchema[s.Name]++
		if isReported {
			switch {
			case r.ttl == -1:
				st.noTTL.add(p.Key)
			case st.tooLongTTL(p.Key, r):
				st.tooLong.add(p.Key)
			}
			if r.hasV && r.typ == TypeString {
				if lim := limitFor(s, p); lim > 0 {
					st.hotCount++
					st.hot = keepTop(st.hot, hotKey{p.Key, float64(r.v) / float64(lim), r.v, lim}, st.opts.SampleSize)
				}
			}
			if r.hasV && r.typ == TypeZSet {
				st.bigCount++
				st.big = keepTop(st.big, hotKey{key: p.Key, ratio: float64(r.v), used: r.v}, st.opts.SampleSize)
			}
		}
		if st.cluster && s.MultiKey {
			id := s.Name + "\x00" + p.ID
			slot := Slot(p.Key)
			if prev, ok := st.slots[id]; ok {
				if prev != slot && prev >= 0 {
					st.cross.add(p.ID + " (" + s.Name + ")")
					st.slots[id] = -1 // report an identity once
				}
			} else if len(st.slots) < maxSlotsTracked {
				st.slots[id] = slot
			}
		}
	}
	st.shards[n.Addr].LimiterKeys += counted
	return nil
}

// tooLongTTL reports whether a reported key's TTL is longer than every
// layout that claims it allows.
func (st *auditState) tooLongTTL(key string, r report) bool {
	if r.ttl <= 0 {
		return false
	}
	max := longestOfAny(st.opts.Schemas, key, r.typ, (*Schema).MaxTTL)
	return max > 0 && r.ttl > max+time.Second
}

// limitFor is the limit a counter key is held to, when known.
func limitFor(s *Schema, p Parsed) int64 {
	switch s.Name {
	case SchemaRedisRate, SchemaSpring, SchemaUpstashBucket:
		return 0 // not counters
	}
	if !s.own.None() && !s.own.Value.Counts() {
		return 0 // rlctl's buckets and TATs: not counters either
	}
	if p.Count > 0 {
		return p.Count // the key names its own limit
	}
	return s.params.Limit.Count
}

// keepTop keeps the n entries with the largest ratio, the first by key
// among equal ones.
func keepTop(list []hotKey, h hotKey, n int) []hotKey {
	list = append(list, h)
	sort.Slice(list, func(i, j int) bool {
		if list[i].ratio != list[j].ratio {
			return list[i].ratio > list[j].ratio
		}
		return list[i].key < list[j].key
	})
	if len(list) > n {
		list = list[:n]
	}
	return list
}

func (st *auditState) keysFinding() Finding {
	var total int64
	var parts []string
	for name, n := range st.bySchema {
		total += n
		parts = append(parts, fmt.Sprintf("%s %d", name, n))
	}
	sort.Strings(parts)
	if total == 0 {
		return Finding{Check: CheckLimiterKeys, Severity: Warn, Message: "no limiter keys among " + textfmt.Count(st.scanned, "key") + ": wrong database, prefix or schema?"}
	}
	return Finding{Check: CheckLimiterKeys, Severity: OK, Count: total, Message: fmt.Sprintf("%s among %d: %s", textfmt.Count(total, "limiter key"), st.scanned, strings.Join(parts, ", "))}
}

// sampleRefresh takes the first PTTL samples for the refresh check from
// the first keys the scan meets (SCAN order is hash order, as good as
// random), so the interval before the second sample runs during the scan.
func (st *auditState) sampleRefresh(ctx context.Context, n Node, cs []auditCand) error {
	st.mu.Lock()
	room := st.opts.RefreshSample - len(st.refresh)
	st.mu.Unlock()
	if room <= 0 {
		return nil
	}
	var keys []string
	var counters []bool
	for _, c := range cs {
		if !c.s.WindowInKey && len(keys) < room {
			keys = append(keys, c.p.Key)
			counters = append(counters, c.s.fitSpec(c.p, c.s.Type) == "string int")
		}
	}
	if len(keys) == 0 {
		return nil
	}
	pipe, sampled := timedPipeline(ctx, n)
	ttls := make([]*redis.DurationCmd, len(keys))
	vals := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		ttls[i], vals[i] = pipe.PTTL(ctx, k), pipe.Get(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isServerError(err) {
		return fmt.Errorf("sample TTLs on %s: %w", n.Addr, err)
	}
	at := sampled()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.firstAt.IsZero() {
		st.firstAt = at.local
	}
	for i, k := range keys {
		// A key about to expire cannot show a refresh.
		if ttl := ttls[i].Val(); ttl > 2*st.opts.RefreshInterval && len(st.refresh) < st.opts.RefreshSample {
			v := vals[i].Val()
			if counters[i] {
				if _, err := strconv.ParseInt(v, 10, 64); err != nil {
					// Not a counter, whatever its name: another
					// application's key (a session with a sliding expiry
					// would look exactly like the bug).
					continue
				}
			}
			st.refresh = append(st.refresh, refreshCand{key: k, node: n, ttl: ttl, val: v, at: at})
		}
	}
	return nil
}

// checkRefresh reads the sampled keys' PTTL a second time, at least
// RefreshInterval after the first. A TTL that fell by less than half the
// time elapsed (by the server's clock: see sampleTime), while the counter
// did not restart, was pushed out in between: the refresh-every-request
// bug that keeps a window from ever rolling under steady traffic.
func (st *auditState) checkRefresh(ctx context.Context) (Finding, error) {
	f := Finding{Check: CheckTTLRefresh, Severity: OK}
	if len(st.refresh) == 0 {
		f.Message = "no keys to sample for TTL refreshes"
		return f, nil
	}
	if wait := st.opts.RefreshInterval - time.Since(st.firstAt); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return f, ctx.Err()
		case <-t.C:
		}
	}
	byNode := map[string][]int{}
	nodes := map[string]Node{}
	for i, r := range st.refresh {
		byNode[r.node.Addr] = append(byNode[r.node.Addr], i)
		nodes[r.node.Addr] = r.node
	}
	ttls := make([]*redis.DurationCmd, len(st.refresh))
	vals := make([]*redis.StringCmd, len(st.refresh))
	ats := make([]sampleTime, len(st.refresh))
	for addr, idx := range byNode {
		pipe, sampled := timedPipeline(ctx, nodes[addr])
		for _, i := range idx {
			ttls[i], vals[i] = pipe.PTTL(ctx, st.refresh[i].key), pipe.Get(ctx, st.refresh[i].key)
		}
		if _, err := pipe.Exec(ctx); err != nil && !isServerError(err) {
			return f, fmt.Errorf("sample TTLs on %s: %w", addr, err)
		}
		now := sampled()
		for _, i := range idx {
			ats[i] = now
		}
	}
	s := sampler{n: st.opts.SampleSize}
	for i, r := range st.refresh {
		b := ttls[i].Val()
		if b <= 0 {
			continue
		}
		elapsed := ats[i].since(r.at)
		if b > r.ttl-elapsed/2 {
			va, errA := strconv.ParseInt(r.val, 10, 64)
			vb, errB := strconv.ParseInt(vals[i].Val(), 10, 64)
			if errA == nil && errB == nil && vb < va {
				continue // the key expired and a new window began
			}
			s.add(r.key)
		}
	}
	if s.count > 0 {
		f = Finding{Check: CheckTTLRefresh, Severity: Fail, Count: s.count, Sample: s.names,
			Message: fmt.Sprintf("%d of %s had their TTL pushed out within %s: the window never rolls while traffic continues (TTL must be set once, when the window opens)", s.count, textfmt.Count(len(st.refresh), "sampled key"), st.opts.RefreshInterval)}
	} else {
		f.Message = fmt.Sprintf("no TTL refreshed among %s over %s", textfmt.Count(len(st.refresh), "sampled key"), st.opts.RefreshInterval)
	}
	return f, nil
}

func (st *auditState) hotFinding(ctx context.Context, c redis.UniversalClient, cfgs []nodeConfig) (Finding, error) {
	if len(st.hot) == 0 {
		return Finding{Check: CheckHot, Severity: OK, Message: fmt.Sprintf("no identity at %.0f%% of a known limit or more", st.opts.HotRatio*100)}, nil
	}
	// Under an LFU policy Redis keeps an access-frequency counter per key:
	// it tells a key hammered right now from one that filled up slowly.
	lfu := false
	for _, nc := range cfgs {
		lfu = lfu || strings.Contains(nc.policy, "lfu")
	}
	var sample []string
	for _, h := range st.hot {
		line := fmt.Sprintf("%s (%d of %d)", h.key, h.used, h.limit)
		if lfu {
			f, err := c.ObjectFreq(ctx, h.key).Result()
			switch {
			case err == nil:
				line += fmt.Sprintf(", LFU frequency %d", f)
			case !isServerError(err):
				return Finding{}, fmt.Errorf("OBJECT FREQ %s: %w", h.key, err)
			}
		}
		sample = append(sample, line)
	}
	// Count is every such key; the sample only the fullest few.
	msg := fmt.Sprintf("%s at %.0f%% of their limit or over; the %d fullest:", textfmt.Count(st.hotCount, "limiter counter"), st.opts.HotRatio*100, len(sample))
	return Finding{Check: CheckHot, Severity: Warn, Count: st.hotCount, Sample: sample, Message: msg}, nil
}

func (st *auditState) bigFinding(ctx context.Context, c redis.UniversalClient) (Finding, error) {
	if len(st.big) == 0 {
		return Finding{Check: CheckBigKeys, Severity: OK, Message: fmt.Sprintf("no sliding log above %d entries", st.opts.BigKeyEntries)}, nil
	}
	var sample []string
	for _, b := range st.big {
		line := fmt.Sprintf("%s (%d entries", b.key, b.used)
		m, err := c.MemoryUsage(ctx, b.key).Result()
		switch {
		case err == nil:
			line += ", " + humanBytes(m)
		case !isServerError(err):
			return Finding{}, fmt.Errorf("MEMORY USAGE %s: %w", b.key, err)
		}
		sample = append(sample, line+")")
	}
	return Finding{Check: CheckBigKeys, Severity: Warn, Count: st.bigCount, Sample: sample,
		Message: fmt.Sprintf("%s above %d entries: memory grows with traffic, and every decision on them costs O(log n) or more; the %d largest:", textfmt.Count(st.bigCount, "sliding log"), st.opts.BigKeyEntries, len(sample))}, nil
}

func (st *auditState) shardFinding(shards []ShardStats) Finding {
	var total int64
	var parts []string
	for _, s := range shards {
		total += s.LimiterKeys
		parts = append(parts, fmt.Sprintf("%s %s, %d ops/s", s.Node, textfmt.Count(s.LimiterKeys, "key"), s.OpsPerSec))
	}
	f := Finding{Check: CheckShards, Severity: OK, Message: "limiter keys per primary: " + strings.Join(parts, "; ")}
	if len(shards) > 1 && total >= 100 {
		mean := float64(total) / float64(len(shards))
		for _, s := range shards {
			if float64(s.LimiterKeys) > 2*mean {
				f.Severity = Warn
				f.Message = fmt.Sprintf("hot shard %s holds %d of %d limiter keys; ", s.Node, s.LimiterKeys, total) + f.Message
			}
		}
	}
	return f
}

// nodeConfig is what one primary says about itself.
type nodeConfig struct {
	addr      string
	policy    string
	aof       bool
	save      string
	replicas  int
	role      string
	nopass    bool
	allPerms  bool
	aclKnown  bool
	protected string
	// used and maxmemory are bytes (maxmemory 0: no limit); oom is set
	// when the node refused a write for lack of memory.
	used, maxmemory int64
	oom             bool
	keys            int64
	ops             int64
	configKnown     bool
	// cluster is a Cluster node, even when reached without a Cluster
	// client: a script there may not read keys of several slots at once.
	cluster bool
}

func readNodeConfig(ctx context.Context, n Node) (nodeConfig, error) {
	nc := nodeConfig{addr: n.Addr}
	info, err := n.Client.Info(ctx, "memory", "persistence", "replication", "stats", "keyspace", "cluster").Result()
	if err != nil {
		return nc, fmt.Errorf("INFO on %s: %w", n.Addr, err)
	}
	nc.policy = redisconn.InfoField(info, "maxmemory_policy")
	nc.aof = redisconn.InfoField(info, "aof_enabled") == "1"
	nc.role = redisconn.InfoField(info, "role")
	nc.cluster = redisconn.InfoField(info, "cluster_enabled") == "1"
	nc.replicas, _ = strconv.Atoi(redisconn.InfoField(info, "connected_slaves"))
	nc.used, _ = strconv.ParseInt(redisconn.InfoField(info, "used_memory"), 10, 64)
	nc.maxmemory, _ = strconv.ParseInt(redisconn.InfoField(info, "maxmemory"), 10, 64)
	switch err := redisconn.OutOfMemory(ctx, n.Client); {
	case errors.Is(err, redisconn.ErrOutOfMemory):
		nc.oom = true
	case err != nil:
		return nc, fmt.Errorf("write check on %s: %w", n.Addr, err)
	}
	nc.ops, _ = strconv.ParseInt(redisconn.InfoField(info, "instantaneous_ops_per_sec"), 10, 64)
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "db") {
			if _, rest, ok := strings.Cut(line, "keys="); ok {
				v, _, _ := strings.Cut(rest, ",")
				k, _ := strconv.ParseInt(v, 10, 64)
				nc.keys += k
			}
		}
	}
	// CONFIG and ACL may be denied on managed services; then those checks
	// say so instead of guessing. Only a refusal from Redis means that: a
	// call that got no answer stops the audit, since the next would wait
	// as long.
	if m, err := n.Client.ConfigGet(ctx, "save").Result(); err == nil {
		nc.configKnown = true
		nc.save = m["save"]
		if pm, err := n.Client.ConfigGet(ctx, "protected-mode").Result(); err == nil {
			nc.protected = pm["protected-mode"]
		} else if !isServerError(err) {
			return nc, fmt.Errorf("CONFIG GET on %s: %w", n.Addr, err)
		}
	} else if !isServerError(err) {
		return nc, fmt.Errorf("CONFIG GET on %s: %w", n.Addr, err)
	}
	u, err := n.Client.Do(ctx, "ACL", "GETUSER", "default").Result()
	if err != nil && !isServerError(err) {
		return nc, fmt.Errorf("ACL GETUSER on %s: %w", n.Addr, err)
	}
	if err == nil {
		// RESP2 answers a flat list of name, value pairs; RESP3 a map.
		fields := map[string]any{}
		switch x := u.(type) {
		case []any:
			for i := 0; i+1 < len(x); i += 2 {
				name, _ := x[i].(string)
				fields[name] = x[i+1]
			}
		case map[any]any:
			for k, v := range x {
				name, _ := k.(string)
				fields[name] = v
			}
		}
		nc.aclKnown = len(fields) > 0
		on, nopass := false, false
		for _, fl := range toStrings(fields["flags"]) {
			on = on || fl == "on"
			nopass = nopass || fl == "nopass"
		}
		// A disabled default user is no risk, password or not.
		nc.nopass = on && nopass
		cmds, _ := fields["commands"].(string)
		nc.allPerms = strings.Contains(cmds, "+@all")
	}
	return nc, nil
}

func toStrings(v any) []string {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, _ := e.(string)
			out = append(out, s)
		}
		return out
	case []string:
		return x
	}
	return nil
}

// configFindings grade every primary's settings; a problem on several
// primaries is one finding naming them.
func configFindings(cfgs []nodeConfig) []Finding {
	sort.Slice(cfgs, func(i, j int) bool { return cfgs[i].addr < cfgs[j].addr })
	group := func(check string, pred func(nodeConfig) bool) []string {
		var nodes []string
		for _, c := range cfgs {
			if pred(c) {
				nodes = append(nodes, c.addr)
			}
		}
		return nodes
	}
	var out []Finding
	policy := "unknown"
	if len(cfgs) > 0 {
		policy = cfgs[0].policy
	}
	if nodes := group(CheckEviction, func(c nodeConfig) bool { return strings.HasPrefix(c.policy, "allkeys-") }); len(nodes) > 0 {
		out = append(out, Finding{Check: CheckEviction, Severity: Fail, Count: int64(len(nodes)), Sample: nodes,
			Message: "maxmemory-policy allkeys-*: under memory pressure Redis evicts limiter keys, and an evicted counter silently fails open"})
	} else if nodes := group(CheckEviction, func(c nodeConfig) bool { return strings.HasPrefix(c.policy, "volatile-") }); len(nodes) > 0 {
		out = append(out, Finding{Check: CheckEviction, Severity: Warn, Count: int64(len(nodes)), Sample: nodes,
			Message: "maxmemory-policy volatile-*: limiter keys all carry TTLs, so they are the first evicted, and an evicted counter fails open"})
	} else {
		out = append(out, Finding{Check: CheckEviction, Severity: OK, Message: "maxmemory-policy " + policy + ": limiter keys are not evicted"})
	}
	out = append(out, memoryFinding(cfgs, group))
	if nodes := group(CheckDurability, func(c nodeConfig) bool { return c.configKnown && !c.aof && c.save == "" && c.replicas == 0 }); len(nodes) > 0 {
		out = append(out, Finding{Check: CheckDurability, Severity: Warn, Count: int64(len(nodes)), Sample: nodes,
			Message: "no persistence and no replica: a restart empties every counter, so every identity gets a fresh quota at once"})
	} else {
		var notes []string
		if n := group("", func(c nodeConfig) bool { return c.replicas > 0 }); len(n) > 0 {
			notes = append(notes, "replication is asynchronous: a failover can lose the last increments, so counters may go back")
		}
		if n := group("", func(c nodeConfig) bool { return c.replicas == 0 }); len(n) > 0 {
			notes = append(notes, fmt.Sprintf("%s without a replica: no failover, restarts reload from disk", textfmt.Count(len(n), "primary")))
		}
		out = append(out, Finding{Check: CheckDurability, Severity: OK, Message: strings.Join(notes, "; ")})
	}
	if nodes := group(CheckAuth, func(c nodeConfig) bool { return c.aclKnown && c.nopass }); len(nodes) > 0 {
		out = append(out, Finding{Check: CheckAuth, Severity: Fail, Count: int64(len(nodes)), Sample: nodes,
			Message: "the default user needs no password (and holds every permission): anyone who reaches the port can reset any quota"})
	} else {
		msg := "the default user requires a password"
		if n := group("", func(c nodeConfig) bool { return c.allPerms }); len(n) > 0 {
			msg += "; it holds every permission (consider a limiter user limited to EVALSHA/GET/INCR on the limiter prefix)"
		}
		if len(group("", func(c nodeConfig) bool { return !c.aclKnown })) > 0 {
			msg = "ACL GETUSER not permitted: authentication not checked"
		}
		out = append(out, Finding{Check: CheckAuth, Severity: OK, Message: msg})
	}
	if nodes := group(CheckProtected, func(c nodeConfig) bool { return c.protected == "no" }); len(nodes) > 0 {
		out = append(out, Finding{Check: CheckProtected, Severity: Warn, Count: int64(len(nodes)), Sample: nodes,
			Message: "protected-mode is off: without a password Redis accepts connections from any interface"})
	} else {
		out = append(out, Finding{Check: CheckProtected, Severity: OK, Message: "protected-mode on (or not readable)"})
	}
	return out
}

// memoryFinding grades how close each primary is to maxmemory: one that
// refuses writes (OOM) fails every limiter call, so its gateways' failure
// policy decides every request instead of the limiter.
func memoryFinding(cfgs []nodeConfig, group func(string, func(nodeConfig) bool) []string) Finding {
	if nodes := group(CheckMemory, func(c nodeConfig) bool { return c.oom }); len(nodes) > 0 {
		c := cfgs[slices.IndexFunc(cfgs, func(c nodeConfig) bool { return c.oom })]
		return Finding{Check: CheckMemory, Severity: Fail, Count: int64(len(nodes)), Sample: nodes,
			Message: fmt.Sprintf("out of memory (OOM): %s used of maxmemory %s under maxmemory-policy %s, so Redis refuses every write: each limiter call fails and the gateways' failure policy decides instead", bytesHuman(c.used), bytesHuman(c.maxmemory), c.policy)}
	}
	near := func(c nodeConfig) bool {
		return c.maxmemory > 0 && c.used*10 >= c.maxmemory*9 && !strings.HasPrefix(c.policy, "allkeys-")
	}
	if nodes := group(CheckMemory, near); len(nodes) > 0 {
		c := cfgs[slices.IndexFunc(cfgs, near)]
		return Finding{Check: CheckMemory, Severity: Warn, Count: int64(len(nodes)), Sample: nodes,
			Message: fmt.Sprintf("%s used of maxmemory %s (90%% or more) under maxmemory-policy %s: once full, writes fail with OOM or limiter keys are evicted", bytesHuman(c.used), bytesHuman(c.maxmemory), c.policy)}
	}
	if len(group("", func(c nodeConfig) bool { return c.maxmemory > 0 })) == 0 {
		return Finding{Check: CheckMemory, Severity: OK, Message: "no maxmemory set: writes are refused only when the machine runs out"}
	}
	return Finding{Check: CheckMemory, Severity: OK, Message: "every primary is below 90% of its maxmemory and takes writes"}
}

// bytesHuman writes n bytes in binary units: 1.5MiB.
func bytesHuman(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, u := float64(n)/unit, 0
	for v >= unit && u < 3 {
		v /= unit
		u++
	}
	return fmt.Sprintf("%.1f%ciB", v, "KMGT"[u])
}

func clockFinding(redisNow, local time.Time, warn time.Duration) Finding {
	d := local.Sub(redisNow)
	if d < 0 {
		d = -d
	}
	f := Finding{Check: CheckClock, Severity: OK, Message: fmt.Sprintf("this machine's clock is within %s of Redis TIME", human(d))}
	if d > warn {
		f.Severity = Warn
		f.Message = fmt.Sprintf("this machine's clock differs from Redis TIME by %s: designs that take the gateway's clock (clock windows, client-side buckets) drift by as much", human(d))
	}
	return f
}

func latencyFinding(l Latency, warn time.Duration) Finding {
	f := Finding{Check: CheckLatency, Severity: OK, Message: fmt.Sprintf("round trip p50 %.2fms p99 %.2fms max %.2fms: the on-path cost of every decision", l.P50, l.P99, l.Max)}
	if l.P99 > float64(warn)/float64(time.Millisecond) {
		f.Severity = Warn
		f.Message += fmt.Sprintf(" (p99 above %s)", warn)
	}
	return f
}

// measureLatency times n sequential PINGs.
func measureLatency(ctx context.Context, c redis.UniversalClient, n int) (Latency, error) {
	d := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			return Latency{}, fmt.Errorf("ping: %w", err)
		}
		d = append(d, float64(time.Since(t0).Microseconds())/1000)
	}
	sort.Float64s(d)
	at := func(q float64) float64 { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return Latency{P50: at(0.5), P99: at(0.99), Max: d[len(d)-1]}, nil
}
