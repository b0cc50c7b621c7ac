package limiter

import (
	"time"

	"github.com/rlctl/rlctl/internal/design"
)

// DefaultPrefix starts every key rlctl's own designs write.
const DefaultPrefix = design.DefaultPrefix

// MarkerKey is the failover marker's key (after the prefix): a string the
// gateways write at start. A promoted replica that never received it, or an
// empty server put in the primary's place, lacks it, which is how a
// failover becomes observable. One marker per deployment: on Redis Cluster
// it lives in one slot, so it detects a failover of that slot's shard only.
const MarkerKey = "marker"

func prefixOf(cfg Config) string {
	if cfg.Prefix == "" {
		return DefaultPrefix
	}
	return cfg.Prefix
}

// keysOf is cfg's design's key schema (none for an unknown name).
func keysOf(cfg Config) design.Keys {
	if d, ok := design.Lookup(cfg.Algorithm); ok {
		return d.Keys
	}
	return design.Keys{}
}

// keyHead is "<prefix><tag>:{", what every key of cfg's design starts
// with before the identity.
func keyHead(cfg Config) string { return prefixOf(cfg) + keysOf(cfg).Tag + ":{" }

// KeyPattern is a SCAN glob matching every key cfg's algorithm writes, for
// example "rl:fw:{*}" or "rl:cw:{*}:*", as its key schema in package
// design says (the layout of each is there). Local designs write no keys
// and get "". The failover marker is rl:marker.
func KeyPattern(cfg Config) string { return keysOf(cfg).Pattern(prefixOf(cfg)) }

// Keys returns the keys one identity touches at time now (the gateway's
// time; with clock: redis, pass the server's time to get the same answer the
// script computes). Local designs return nil.
func Keys(cfg Config, id string, now time.Time) []string {
	return keysOf(cfg).Of(prefixOf(cfg), id, windowIndex(now, cfg.Limit.Window))
}

// windowIndex is floor(now_ms / W_ms), the same number the scripts compute.
func windowIndex(now time.Time, w time.Duration) int64 {
	wm := w.Milliseconds()
	if wm <= 0 {
		return 0
	}
	ms := now.UnixMilli()
	idx := ms / wm
	if ms%wm != 0 && ms < 0 {
		idx--
	}
	return idx
}
