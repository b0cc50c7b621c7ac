package keyspace

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed repair_ttl.lua
var repairLua string

var repairScript = redis.NewScript(repairLua)

//go:embed repair_scan.lua
var repairScanLua string

var repairScanScript = redis.NewScript(repairScanLua)

// RepairOptions select the keys repair-ttl looks at and how it works.
type RepairOptions struct {
	// Schemas are the layouts whose keys are repaired.
	Schemas []*Schema
	// Match, when set, is the SCAN pattern instead of the schemas' own;
	// keys it finds that no schema claims get TTL.
	Match string
	// TTL overrides the schemas' TTL rules.
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

// RepairStats summarise a repair-ttl run. The JSON form is stable.
type RepairStats struct {
	// Scanned counts keys SCAN returned.
	Scanned int64 `json:"scanned"`
	// Matched counts the limiter keys among them.
	Matched int64 `json:"limiter_keys"`
	// MissingTTL counts limiter keys found without a TTL.
	MissingTTL int64 `json:"missing_ttl"`
	// Repaired counts keys that got a TTL.
	Repaired int64 `json:"repaired"`
	// Skipped counts keys that had gained a TTL (or vanished) by the time
	// they were repaired: a gateway was faster, which is fine.
	Skipped int64 `json:"skipped_fixed_meanwhile"`
	// NoRule counts keys without TTL whose right TTL is unknown (pass
	// --ttl or --limit).
	NoRule int64 `json:"skipped_unknown_ttl"`
	// Sample holds some keys found without TTL.
	Sample []string `json:"sample"`
	// DryRun is true when nothing was changed.
	DryRun bool `json:"dry_run"`
}

type repairJob struct {
	opts  RepairOptions
	glob  string
	start time.Time
	mu    sync.Mutex
	st    RepairStats
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
	j.st.DryRun, j.st.Sample = opts.DryRun, []string{}
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
		if !opts.DryRun {
			if err := repairScript.Load(ctx, n.Client).Err(); err != nil {
				return fmt.Errorf("load repair script on %s: %w", n.Addr, err)
			}
		}
		return ScanNode(ctx, n, j.glob, func(keys []string) error { return j.page(ctx, n, keys) })
	})
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st, err
}

func (j *repairJob) page(ctx context.Context, n Node, names []string) error {
	// Keep only the names a schema claims (or all, for an explicit
	// pattern); the type check comes once a key is known to lack a TTL.
	var cand []string
	for _, k := range names {
		if _, _, ok := Match(j.opts.Schemas, k, ""); ok || j.opts.Match != "" {
			cand = append(cand, k)
		}
	}
	var missing []string
	var ttls []time.Duration
	var noRule int64
	if len(cand) > 0 {
		// The server checks the page's PTTLs and answers only with the
		// keys that lack one (and their types): a small reply per page.
		all := make([]int, len(cand))
		for i := range all {
			all[i] = i
		}
		res, err := runChunked(ctx, n, repairScanScript, cand, []keyRun{{idx: all}}, 2)
		if err != nil {
			return fmt.Errorf("read TTLs on %s: %w", n.Addr, err)
		}
		for i := 0; i+1 < len(res); i += 2 {
			pos, _ := res[i].(int64)
			typ, _ := res[i+1].(string)
			if pos < 1 || int(pos) > len(cand) {
				return fmt.Errorf("read TTLs on %s: bad reply %v", n.Addr, res[i])
			}
			k := cand[pos-1]
			s, p, ok := Match(j.opts.Schemas, k, typ)
			if !ok && j.opts.Match == "" {
				continue
			}
			ttl := j.opts.TTL
			if ttl == 0 && ok {
				ttl = s.TTL(p)
			}
			if ttl <= 0 {
				noRule++
				continue
			}
			missing = append(missing, k)
			ttls = append(ttls, ttl)
		}
	}
	j.mu.Lock()
	j.st.Scanned += int64(len(names))
	j.st.Matched += int64(len(cand))
	j.st.MissingTTL += int64(len(missing)) + noRule
	j.st.NoRule += noRule
	for _, k := range missing {
		if len(j.st.Sample) < j.opts.SampleSize {
			j.st.Sample = append(j.st.Sample, k)
		}
	}
	j.mu.Unlock()

	if len(missing) > 0 && !j.opts.DryRun {
		if j.opts.BeforeRepair != nil {
			j.opts.BeforeRepair(ctx, missing)
		}
		pipe := n.Client.Pipeline()
		cmds := make([]*redis.Cmd, len(missing))
		for i, k := range missing {
			cmds[i] = repairScript.EvalSha(ctx, pipe, []string{k}, ttls[i].Milliseconds())
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("set TTLs on %s: %w", n.Addr, err)
		}
		var fixed int64
		for _, cmd := range cmds {
			if v, _ := cmd.Int64(); v == 1 {
				fixed++
			}
		}
		j.mu.Lock()
		j.st.Repaired += fixed
		j.st.Skipped += int64(len(missing)) - fixed
		j.mu.Unlock()
	}

	j.mu.Lock()
	snap := j.st
	j.mu.Unlock()
	if j.opts.Progress != nil {
		j.opts.Progress(snap)
	}
	return pace(ctx, j.start, snap.Scanned, j.opts.MaxRate)
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
