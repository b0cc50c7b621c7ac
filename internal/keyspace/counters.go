package keyspace

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlctl/rlctl/internal/design"
)

// Kinds of counter a Count was read from.
const (
	CountWindow = "window" // a window's counter: requests (or hits) counted
	CountBucket = "bucket" // a token bucket: capacity minus the tokens left
	CountGCRA   = "gcra"   // a theoretical arrival time: requests not yet paid back
	CountLog    = "log"    // a sliding log: entries in the window (all, when it is unknown)
)

// Count is what one identity's limiter holds against it now, read from
// its keys and turned into one number.
type Count struct {
	ID string `json:"id"`
	// Used is what the limiter counts as spent now: a window counter's
	// value (which may exceed the limit where the library counts denied
	// requests too), a bucket's capacity minus its tokens refilled to the
	// Redis clock and rounded up (a part-refilled token cannot be spent),
	// a GCRA's requests still ahead of the clock, a log's entries in the
	// window. With no key, Used is 0: a full allowance.
	Used int64 `json:"used"`
	// Known is false when the keys cannot be turned into a count (a
	// bucket or GCRA whose limit was not given, a hash layout that counts
	// nothing); Note says why.
	Known bool   `json:"known"`
	Note  string `json:"note,omitempty"`
	// Kind is how Used was read (CountWindow, ...); "" with no key.
	Kind string `json:"kind,omitempty"`
	// Key is the key Used was read from ("" with no key), and Keys every
	// key of the identity found under the layout (older windows, a
	// bucket's timestamp), which a reset of the identity would delete.
	Key  string   `json:"key,omitempty"`
	Keys []string `json:"keys,omitempty"`
}

// Counts are the counts of several identities, read at one Redis time.
type Counts struct {
	// ServerTime is Redis TIME when the counts were read: the clock
	// buckets were refilled to and windows judged by.
	ServerTime time.Time `json:"server_time"`
	Counts     []Count   `json:"counts"`
}

// Get returns the count of identity id, and false when it was not read.
func (c *Counts) Get(id string) (Count, bool) {
	for _, n := range c.Counts {
		if n.ID == id {
			return n, true
		}
	}
	return Count{}, false
}

// ReadCounts reads what the limiter whose key layout is s holds against
// each of ids, without writing anything: the exact keys the layout names
// are read directly, and where keys carry more than the identity (window
// indexes, routes) one SCAN pass per primary finds them (never KEYS). s's
// Params must carry the published limit for buckets and GCRA, whose state
// is a time, not a count. Works through a standalone, Sentinel or Cluster
// client; Counts come back in the order of ids.
//
// Where an identity has several counters (Kong's periods, envoy's
// descriptors), the one whose window the key names as the published
// limit's is read, else the fullest; of windows in the key, the current.
func ReadCounts(ctx context.Context, c redis.UniversalClient, s *Schema, ids []string) (*Counts, error) {
	now, err := ServerTime(ctx, c)
	if err != nil {
		return nil, err
	}
	names, err := countKeyNames(ctx, c, s, ids)
	if err != nil {
		return nil, err
	}
	keys, err := ReadKeys(ctx, c, []*Schema{s}, names, now)
	if err != nil {
		return nil, fmt.Errorf("read counters: %w", err)
	}
	out := &Counts{ServerTime: now, Counts: make([]Count, 0, len(ids))}
	for _, id := range ids {
		var mine []*Key
		for _, k := range keys {
			if k.schema != nil && s.HasID(k.parsed, id) {
				mine = append(mine, k)
			}
		}
		out.Counts = append(out.Counts, countOf(s, id, mine, now))
	}
	return out, nil
}

// countKeyNames lists the keys of ids that may exist: the layout's exact
// names, and the names matching its per-identity globs found by one SCAN
// of the layout's glob on every primary.
func countKeyNames(ctx context.Context, c redis.UniversalClient, s *Schema, ids []string) ([]string, error) {
	seen := map[string]bool{}
	var names []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			names = append(names, k)
		}
	}
	type idGlob struct{ id, glob string }
	var globs []idGlob
	wanted := map[string]bool{}
	for _, id := range ids {
		exact, g := s.IdentityKeys(id)
		for _, k := range exact {
			add(k)
		}
		for _, gl := range g {
			globs = append(globs, idGlob{id, gl})
		}
		if len(g) > 0 {
			wanted[id] = true
		}
	}
	if len(globs) == 0 {
		return names, nil
	}
	var mu sync.Mutex
	err := ForEachPrimary(ctx, c, func(ctx context.Context, n Node) error {
		return ScanNode(ctx, n, s.Glob(), func(keys []string) error {
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				// Most layouts name the identity exactly: one map lookup
				// instead of every identity's glob.
				if p, ok := s.Parse(k, ""); ok && s.hasID == nil {
					if wanted[p.ID] {
						add(k)
					}
					continue
				}
				for _, g := range globs {
					if globMatch(g.glob, k) {
						add(k)
						break
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("find the counters' keys: %w", err)
	}
	return names, nil
}

// countOf turns one identity's keys into its count.
func countOf(s *Schema, id string, keys []*Key, now time.Time) Count {
	n := Count{ID: id, Known: true}
	if len(keys) == 0 {
		return n
	}
	for _, k := range keys {
		n.Keys = append(n.Keys, k.Key)
	}
	joinSpringBucket(keys, now)
	k := currentCounter(s, keys)
	if k == nil {
		n.Known, n.Note = false, "no counter among the identity's keys"
		return n
	}
	n.Key = k.Key
	n.Used, n.Kind, n.Known = usedOf(s, k)
	if !n.Known {
		n.Note = fmt.Sprintf("%s: %s", k.Key, k.Meaning)
	}
	return n
}

// currentCounter picks the key that counts now: not a previous window's
// or a bucket's timestamp, the latest window of each part, and among
// parts the published window's, else the fullest.
func currentCounter(s *Schema, keys []*Key) *Key {
	latest := map[string]*Key{}
	var parts []string
	for _, k := range keys {
		p := k.parsed
		if strings.HasSuffix(p.Part, "previous") || (s.Name == SchemaSpring && p.Part == "timestamp") {
			continue
		}
		cur, ok := latest[p.Part]
		if !ok {
			parts = append(parts, p.Part)
		}
		if !ok || p.Window > cur.parsed.Window {
			latest[p.Part] = k
		}
	}
	var best *Key
	var bestUsed int64
	for _, part := range parts {
		k := latest[part]
		if w := s.params.Limit.Window; w > 0 && k.parsed.WindowLen == w {
			return k
		}
		if s.WindowInKey && k.ResetMillis != nil && *k.ResetMillis <= 0 {
			continue // its window is over: nothing counts against it now
		}
		used, _, _ := usedOf(s, k)
		if best == nil || used > bestUsed {
			best, bestUsed = k, used
		}
	}
	return best
}

// usedOf reads a key's count in the layout's terms (see Count.Used).
func usedOf(s *Schema, k *Key) (used int64, kind string, known bool) {
	switch {
	case k.Type == TypeZSet || k.Type == TypeList:
		if k.Used != nil {
			return *k.Used, CountLog, true
		}
		if k.Entries != nil {
			return *k.Entries, CountLog, true
		}
	case k.Used != nil:
		return *k.Used, CountWindow, true
	case k.Tokens != nil && k.Limit != nil:
		spent := float64(*k.Limit) - *k.Tokens
		return max(int64(math.Ceil(spent-1e-9)), 0), CountBucket, true
	case (isTAT(s.Name) || s.Name == SchemaRedisRate) && k.ResetMillis != nil:
		t := s.params.Limit.Interval()
		if t <= 0 {
			return 0, CountGCRA, false
		}
		ahead := time.Duration(*k.ResetMillis) * time.Millisecond
		return int64(math.Ceil(float64(ahead) / float64(t))), CountGCRA, true
	case k.Tokens != nil:
		return 0, CountBucket, false
	}
	return 0, "", false
}

// isTAT reports whether name is one of rlctl's designs that keeps a
// theoretical arrival time (GCRA).
func isTAT(name string) bool {
	d, ok := design.Lookup(name)
	return ok && d.Keys.Value == design.ValueTAT
}
