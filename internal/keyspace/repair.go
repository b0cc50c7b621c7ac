package keyspace

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed repair_ttl.lua
var repairLua string

// repairScript checks that a key still lacks a TTL and holds what a
// limiter layout writes, and sets the TTL, in one atomic step.
var repairScript = redis.NewScript(fitLua + repairLua)

//go:embed repair_scan.lua
var repairScanLua string

var repairScanScript = redis.NewScript(repairScanLua)

// WalkCount is the SCAN COUNT of a page that repair-ttl scans and checks
// in one script call: small enough that one call stays well under a
// millisecond of Redis's time, so other clients' latency barely moves,
// large enough that the round trips stay few. make bench measures both.
const WalkCount = 500

// RepairOptions select the keys repair-ttl looks at and how it works.
type RepairOptions struct {
	// Schemas are the layouts whose keys are repaired.
	Schemas []*Schema
	// Match, when set, is the SCAN pattern instead of the schemas' own. It
	// only narrows what is looked at: a key it finds is repaired only if
	// one of Schemas claims it (name, type and value), like any other;
	// the rest are counted in Unclaimed and never touched.
	Match string
	// TTL overrides the TTL rules of the schemas that claim a key.
	TTL time.Duration
	// DryRun finds the keys without touching any.
	DryRun bool
	// MaxRate caps the keys scanned per second (0: no cap), so a large
	// keyspace is walked without disturbing production latency.
	MaxRate float64
	// SampleSize bounds the key names kept for the report (default 20).
	SampleSize int
	// Progress, when set, is called after every SCAN page.
	Progress func(RepairStats)
	// BeforeRepair, when set, runs after a page's keys without TTL were
	// found and before they are repaired (tests use it to change keys in
	// between).
	BeforeRepair func(ctx context.Context, keys []string)
}

// Outcomes of repair_ttl.lua for one key.
const (
	repairSet    = 1  // TTL set (or, checking only, would be)
	repairHasTTL = 0  // a TTL was set meanwhile
	repairGone   = -2 // deleted meanwhile
	repairNotFit = -3 // type or value fit no layout: not a limiter's key
)

// checkOnlyTTLMs is the TTL argument that makes repair_ttl.lua change
// nothing.
const checkOnlyTTLMs = 0

// RepairStats summarise a repair-ttl run. The JSON form is stable.
type RepairStats struct {
	// Scanned counts keys SCAN returned.
	Scanned int64 `json:"scanned"`
	// Matched counts the keys among them whose names a limiter layout
	// claims.
	Matched int64 `json:"limiter_keys"`
	// MissingTTL counts limiter keys found without a TTL (in a dry run,
	// those that would be repaired or whose TTL rule is unknown).
	MissingTTL int64 `json:"missing_ttl"`
	// Repaired counts keys that got a TTL.
	Repaired int64 `json:"repaired"`
	// Skipped counts keys that had gained a TTL (or vanished) by the time
	// they were repaired: a gateway was faster, which is fine. The script
	// that repairs a key is never sent twice, so rlctl's own repair never
	// lands here.
	Skipped int64 `json:"skipped_fixed_meanwhile"`
	// NoRule counts keys without TTL whose right TTL is unknown (pass
	// --ttl or --limit).
	NoRule int64 `json:"skipped_unknown_ttl"`
	// NotFitting counts keys without TTL whose name and type a layout
	// claims but whose value does not fit it (a counter that is not an
	// integer, a hash without a bucket's fields), checked on the server as
	// the key was about to be repaired: another application's keys, left
	// alone.
	NotFitting int64 `json:"skipped_not_limiter"`
	// Unclaimed counts keys the Match pattern found that no layout claims
	// (by name, or by type for those without TTL): left alone. Zero
	// without Match.
	Unclaimed int64 `json:"unclaimed"`
	// Unknown counts keys whose repair call got no answer (it timed out,
	// or the connection was lost): Redis may or may not have set their
	// TTL. The run stops with an error when it is not zero; running again
	// finishes the job.
	Unknown int64 `json:"unknown_outcome"`
	// Denied counts limiter keys the connected ACL user may not read, or
	// (repairing) may not change: left alone, and the run ends with a
	// *PermissionError naming some of them.
	Denied int64 `json:"denied"`
	// Sample holds some keys found without TTL.
	Sample []string `json:"sample"`
	// Layouts are the keys found without TTL (NotFitting ones aside) by
	// the layout that claims them and the TTL they got, or in a dry run
	// would get (0: unknown, left alone), in the order first met.
	Layouts []LayoutTTL `json:"layouts"`
	// LeftAlone holds some keys counted in NotFitting or Unclaimed.
	LeftAlone []string `json:"left_alone_sample"`
	// DryRun is true when nothing was changed.
	DryRun bool `json:"dry_run"`
}

// LayoutTTL is how repair-ttl treats one layout's keys without TTL: the
// TTL they get (its TTL rule's, or --ttl), how many there were and some
// of their names. The JSON form is stable.
type LayoutTTL struct {
	// Layout is the schema name (an rlctl design's or a library's).
	Layout string `json:"layout"`
	// TTLMillis is the TTL set (or, in a dry run, that would be), in
	// milliseconds; 0 when the TTL is unknown and the keys are left alone.
	TTLMillis int64 `json:"ttl_ms"`
	// Keys counts them; Sample names some.
	Keys   int64    `json:"keys"`
	Sample []string `json:"sample"`
}

type repairJob struct {
	opts  RepairOptions
	glob  string
	start time.Time
	mu    sync.Mutex
	st    RepairStats
	// scanOnly is set once the server refused to check a page while it
	// scanned (an ACL user that may not read some of its keys): from then
	// on pages are scanned, and only their limiter keys checked.
	scanOnly bool
	// denied are the keys the ACL user may not read or change; denyWrite
	// is set when some could be read but not changed.
	denied    denied
	denyWrite bool
}

// RepairTTL walks the limiter keys with SCAN (every primary on a Cluster),
// finds those without a TTL with pipelined PTTL and TYPE, and gives each
// the TTL its schema sets (or opts.TTL) through a script that does so only
// if the key still has none. Values are never changed. It is safe to
// interrupt through ctx and to run again; the stats so far are returned
// with the error.
func RepairTTL(ctx context.Context, c redis.UniversalClient, opts RepairOptions) (RepairStats, error) {
	if opts.SampleSize == 0 {
		opts.SampleSize = 20
	}
	j := &repairJob{opts: opts, start: time.Now()}
	j.st.DryRun, j.st.Sample, j.st.LeftAlone, j.st.Layouts = opts.DryRun, []string{}, []string{}, []LayoutTTL{}
	switch {
	case opts.Match != "":
		j.glob = opts.Match
	case len(opts.Schemas) == 1:
		j.glob = opts.Schemas[0].Glob()
	case len(opts.Schemas) == 0:
		return j.st, errors.New("repair-ttl: no schema and no pattern given")
	default:
		j.glob = "*" // one pass, matched here against every schema
	}
	err := ForEachPrimary(ctx, c, func(ctx context.Context, n Node) error {
		// A dry run uses the script too, to check keys without changing them.
		if err := repairScript.Load(ctx, n.Client).Err(); err != nil {
			return fmt.Errorf("load repair script on %s: %w", n.Addr, err)
		}
		return scanPages(ctx, j.fetch(n), 1, func(p repairPage) error { return j.page(ctx, n, p) })
	})
	j.mu.Lock()
	defer j.mu.Unlock()
	if err == nil {
		err = j.denied.err("repair-ttl", j.denyWrite)
	}
	return j.st, err
}

// repairPage is one SCAN page: its names and, when the server checked
// them while scanning, the (position, type) pairs of those without TTL.
type repairPage struct {
	names   []string
	checked bool
	found   []any
}

// fetch reads the page at cursor. While nearly all keys scanned so far
// were limiter keys, the server checks the TTLs while it scans
// (repair_scan.lua): the names need not travel back, which spares Redis
// and the network a copy of every name. Otherwise it scans only, and the
// limiter keys among them are checked by repair_scan.lua, so other keys
// cost no PTTL (nor a TYPE). Both walk the same SCAN cursor, so a pass can
// switch between them from page to page. A server that refuses the first
// way (an ACL user that may not read every key) is scanned the second way
// from then on.
func (j *repairJob) fetch(n Node) func(ctx context.Context, cursor uint64) (repairPage, bool, uint64, error) {
	return func(ctx context.Context, cursor uint64) (repairPage, bool, uint64, error) {
		j.mu.Lock()
		walk := 10*j.st.Matched >= 9*j.st.Scanned && !j.scanOnly
		j.mu.Unlock()
		if walk {
			p, ok, next, err := j.walk(ctx, n, cursor)
			if !IsNoPerm(err) {
				return p, ok, next, err
			}
			// The user may not read some key of the page: scan only, and
			// check the limiter keys among them one by one if need be.
			j.mu.Lock()
			j.scanOnly = true
			j.mu.Unlock()
		}
		keys, next, err := n.Client.Scan(ctx, cursor, j.glob, ScanCount).Result()
		if err != nil {
			return repairPage{}, false, 0, fmt.Errorf("scan %s on %s: %w", j.glob, n.Addr, err)
		}
		return repairPage{names: keys}, len(keys) > 0, next, nil
	}
}

// walk reads the page at cursor with repair_scan.lua, which checks the
// TTLs of the keys as it scans them.
func (j *repairJob) walk(ctx context.Context, n Node, cursor uint64) (repairPage, bool, uint64, error) {
	res, err := repairScanScript.Run(ctx, n.Client, nil, "scan", cursor, j.glob, WalkCount).Slice()
	if err != nil {
		return repairPage{}, false, 0, fmt.Errorf("scan %s on %s: %w", j.glob, n.Addr, err)
	}
	if len(res) < 2 {
		return repairPage{}, false, 0, fmt.Errorf("scan %s on %s: bad reply", j.glob, n.Addr)
	}
	cur, _ := res[0].(string)
	next, err := strconv.ParseUint(cur, 10, 64)
	if err != nil {
		return repairPage{}, false, 0, fmt.Errorf("scan %s on %s: bad cursor %q", j.glob, n.Addr, cur)
	}
	raw, _ := res[1].([]any)
	p := repairPage{names: make([]string, len(raw)), checked: true, found: res[2:]}
	for i, k := range raw {
		p.names[i], _ = k.(string)
	}
	return p, len(p.names) > 0, next, nil
}

// repairCand is a key found without a TTL that a layout claims by name and
// type: the TTL it gets (0: unknown) and the value specs it must fit.
type repairCand struct {
	key    string
	layout string
	ttl    time.Duration
	specs  []string
}

func (j *repairJob) page(ctx context.Context, n Node, pg repairPage) error {
	// Keep only the names a schema claims; the type check comes once a
	// key is known to lack a TTL, and the value check as it is repaired.
	names := pg.names
	var cand, unclaimed []string
	claimed := make([]bool, len(names))
	for i, k := range names {
		if _, _, ok := Match(j.opts.Schemas, k, ""); ok {
			cand = append(cand, k)
			claimed[i] = true
		} else if j.opts.Match != "" {
			unclaimed = append(unclaimed, k)
		}
	}
	// found lists, in (position, type) pairs, the keys without a TTL
	// among keys: the page's names when the server checked them while
	// scanning, else the candidates, checked now.
	found, keys := pg.found, names
	matched := int64(len(cand))
	var no []string
	if !pg.checked && len(cand) > 0 {
		// The server checks the page's PTTLs and answers only with the
		// keys that lack one (and their types): a small reply per page.
		res, err := runChunked(ctx, n, repairScanScript, cand, []keyRun{{head: []any{"keys"}, idx: upTo(len(cand))}}, 2)
		if IsNoPerm(err) {
			// The user may not read some of them: check those it may.
			if cand, no, err = splitReadable(ctx, n, cand); err == nil {
				res, err = runChunked(ctx, n, repairScanScript, cand, []keyRun{{head: []any{"keys"}, idx: upTo(len(cand))}}, 2)
			}
		}
		if err != nil {
			return fmt.Errorf("read TTLs on %s: %w", n.Addr, err)
		}
		found, keys = res, cand
	}
	var todo []repairCand
	for i := 0; i+1 < len(found); i += 2 {
		pos, _ := found[i].(int64)
		typ, _ := found[i+1].(string)
		if pos < 1 || int(pos) > len(keys) {
			return fmt.Errorf("read TTLs on %s: bad reply %v", n.Addr, found[i])
		}
		if pg.checked && !claimed[pos-1] {
			continue
		}
		k := keys[pos-1]
		specs := fitSpecs(j.opts.Schemas, k, typ)
		if len(specs) == 0 {
			// Its name looked like a limiter's, its type does not.
			if j.opts.Match != "" {
				unclaimed = append(unclaimed, k)
			}
			continue
		}
		ttl := j.opts.TTL
		if ttl == 0 {
			ttl = longestOfAny(j.opts.Schemas, k, typ, (*Schema).TTL)
		}
		layout := ""
		if s, _, ok := Match(j.opts.Schemas, k, typ); ok {
			layout = s.Name
		}
		todo = append(todo, repairCand{key: k, layout: layout, ttl: max(ttl, 0), specs: specs})
	}
	j.mu.Lock()
	j.st.Scanned += int64(len(names))
	j.st.Matched += matched
	j.st.Denied += int64(len(no))
	j.denied.add(no...)
	j.st.Unclaimed += int64(len(unclaimed))
	j.leftAlone(unclaimed)
	j.mu.Unlock()

	if err := j.repair(ctx, n, todo); err != nil {
		return err
	}
	j.mu.Lock()
	snap := j.st
	j.mu.Unlock()
	if j.opts.Progress != nil {
		j.opts.Progress(snap)
	}
	return pace(ctx, j.start, snap.Scanned, j.opts.MaxRate)
}

// byLayout counts c, a key found without TTL that gets one (or would, or
// is left alone for want of a rule), under its layout and TTL; j.mu is
// held.
func (j *repairJob) byLayout(c repairCand) {
	ms := c.ttl.Milliseconds()
	if c.ttl > 0 {
		ms = max(ms, 1) // as repair sets it
	}
	i := slices.IndexFunc(j.st.Layouts, func(l LayoutTTL) bool { return l.Layout == c.layout && l.TTLMillis == ms })
	if i < 0 {
		i = len(j.st.Layouts)
		j.st.Layouts = append(j.st.Layouts, LayoutTTL{Layout: c.layout, TTLMillis: ms, Sample: []string{}})
	}
	l := &j.st.Layouts[i]
	l.Keys++
	if len(l.Sample) < j.opts.SampleSize {
		l.Sample = append(l.Sample, c.key)
	}
}

// leftAlone adds keys to the sample of those left alone; j.mu is held.
func (j *repairJob) leftAlone(keys []string) {
	for _, k := range keys {
		if len(j.st.LeftAlone) >= j.opts.SampleSize {
			return
		}
		j.st.LeftAlone = append(j.st.LeftAlone, k)
	}
}

// repair runs repair_ttl.lua on each candidate, pipelined: it checks, on
// the server and atomically with the change, that the key still lacks a
// TTL and fits a layout, and sets the TTL unless this is a dry run or the
// TTL is unknown. Each call is sent at most once (see once): a call whose
// answer never came is counted as Unknown, not guessed.
func (j *repairJob) repair(ctx context.Context, n Node, todo []repairCand) error {
	if len(todo) == 0 {
		return nil
	}
	if !j.opts.DryRun && j.opts.BeforeRepair != nil {
		var keys []string
		for _, c := range todo {
			if c.ttl > 0 {
				keys = append(keys, c.key)
			}
		}
		if len(keys) > 0 {
			j.opts.BeforeRepair(ctx, keys)
		}
	}
	pipe := n.Client.Pipeline()
	cmds := make([]*redis.Cmd, len(todo))
	writes := make([]bool, len(todo))
	for i, c := range todo {
		writes[i] = !j.opts.DryRun && c.ttl > 0
		ttl := int64(checkOnlyTTLMs)
		if writes[i] {
			// A TTL below 1ms would be 0, which means "check only".
			ttl = max(c.ttl.Milliseconds(), 1)
		}
		args := []any{"evalsha", repairScript.Hash(), 1, c.key, ttl}
		for _, s := range c.specs {
			args = append(args, s)
		}
		cmds[i] = redis.NewCmd(ctx, args...)
		_ = pipe.Process(ctx, once{cmds[i]})
	}
	_, execErr := pipe.Exec(ctx)

	j.mu.Lock()
	defer j.mu.Unlock()
	var unknown int64
	var firstErr error
	for i, cmd := range cmds {
		c := todo[i]
		v, err := cmd.Int64()
		if IsNoPerm(err) {
			// The user may read the key but not change it (or, checking,
			// not read it): left alone, and said at the end.
			j.st.Denied++
			j.denied.add(c.key)
			j.denyWrite = j.denyWrite || writes[i]
			continue
		}
		if err != nil {
			// An error reply (NOSCRIPT, OOM ...) means the script did not
			// run; no reply means it may have.
			var re redis.Error
			if writes[i] && !errors.As(err, &re) {
				unknown++
				j.st.MissingTTL++
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		switch v {
		case repairSet:
			j.st.MissingTTL++
			switch {
			case c.ttl <= 0:
				j.st.NoRule++
			case writes[i]:
				j.st.Repaired++
			}
			if c.ttl > 0 && len(j.st.Sample) < j.opts.SampleSize {
				j.st.Sample = append(j.st.Sample, c.key)
			}
			j.byLayout(c)
		case repairHasTTL, repairGone:
			if writes[i] {
				j.st.MissingTTL++
				j.st.Skipped++
			}
		case repairNotFit:
			j.st.NotFitting++
			j.leftAlone([]string{c.key})
		default:
			if firstErr == nil {
				firstErr = fmt.Errorf("bad reply %d for %s", v, c.key)
			}
		}
	}
	j.st.Unknown += unknown
	if firstErr == nil && !IsNoPerm(execErr) {
		firstErr = execErr
	}
	if firstErr == nil {
		return nil
	}
	if unknown > 0 {
		return fmt.Errorf("set TTLs on %s: no answer for %d keys, which may or may not have their TTL now: %w", n.Addr, unknown, firstErr)
	}
	return fmt.Errorf("repair keys on %s: %w", n.Addr, firstErr)
}

// upTo is 0, 1, ..., n-1.
func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// pace sleeps until done items at rate per second are due since start:
// scheduling from the start rather than per page keeps the average exact.
func pace(ctx context.Context, start time.Time, done int64, rate float64) error {
	if rate <= 0 {
		return ctx.Err()
	}
	due := start.Add(time.Duration(float64(done) / rate * float64(time.Second)))
	wait := time.Until(due)
	if wait <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
