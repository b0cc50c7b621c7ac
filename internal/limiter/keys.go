package limiter

import (
	"strconv"
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

// tag is the short name each algorithm uses in its keys (rl:<tag>:{id}).
var tags = map[string]string{
	RedisGetIncr:            "gi",
	RedisFixedWindow:        "fw",
	RedisFixedWindowRefresh: "fwr",
	RedisClockWindow:        "cw",
	RedisTokenBucket:        "tb",
	RedisSlidingWindow:      "sw",
	RedisSlidingLog:         "sl",
	RedisGCRA:               "gcra",
	Leasing:                 "lease",
}

// windowed designs append ":<window index>" to the identity's base key.
var windowed = map[string]bool{
	RedisClockWindow:   true,
	RedisSlidingWindow: true,
	Leasing:            true,
}

func prefixOf(cfg Config) string {
	if cfg.Prefix == "" {
		return DefaultPrefix
	}
	return cfg.Prefix
}

// baseKey is "<prefix><tag>:{<id>}": the braces are a Redis Cluster hash
// tag, so every key of one identity lands in one slot and a script may
// touch all of them.
func baseKey(prefix, tag, id string) string {
	b := make([]byte, 0, len(prefix)+len(tag)+len(id)+3)
	b = append(b, prefix...)
	b = append(b, tag...)
	b = append(b, ':', '{')
	b = append(b, id...)
	b = append(b, '}')
	return string(b)
}

// KeyPattern is a SCAN glob matching every key cfg's algorithm writes, for
// example "rl:fw:{*}" or "rl:cw:{*}:*". Local designs write no keys and get
// "".
//
// Layout (default prefix rl:, {id} is the identity inside literal braces):
//
//	redis-get-incr              rl:gi:{id}            string counter, EXPIRE W on first INCR
//	redis-fixed-window          rl:fw:{id}            string counter, PEXPIRE W when the window opens
//	redis-fixed-window-refresh  rl:fwr:{id}           string counter, PEXPIRE W on every request (the bug)
//	redis-clock-window          rl:cw:{id}:<idx>      string counter, idx = floor(now_ms/W_ms), TTL W
//	redis-token-bucket          rl:tb:{id}            hash {tokens, ts(ms)}, TTL = time to refill to full
//	redis-sliding-window        rl:sw:{id}:<idx>      string counters (current, previous), TTL 2W
//	redis-sliding-log           rl:sl:{id}            sorted set, score = ms timestamp, TTL W
//	redis-gcra                  rl:gcra:{id}          string TAT in ms since the Unix epoch (float), TTL until TAT
//	leasing                     rl:lease:{id}:<idx>   string, budget granted this window, TTL W
//	(failover marker)           rl:marker             string token written by the gateways at start
func KeyPattern(cfg Config) string {
	tag, ok := tags[cfg.Algorithm]
	if !ok {
		return ""
	}
	p := prefixOf(cfg) + tag + ":{*}"
	if windowed[cfg.Algorithm] {
		p += ":*"
	}
	return p
}

// Keys returns the keys one identity touches at time now (the gateway's
// time; with clock: redis, pass the server's time to get the same answer the
// script computes). Local designs return nil.
func Keys(cfg Config, id string, now time.Time) []string {
	tag, ok := tags[cfg.Algorithm]
	if !ok {
		return nil
	}
	base := baseKey(prefixOf(cfg), tag, id)
	if !windowed[cfg.Algorithm] {
		return []string{base}
	}
	idx := windowIndex(now, cfg.Limit.Window)
	if cfg.Algorithm == RedisSlidingWindow {
		return []string{windowKey(base, idx), windowKey(base, idx-1)}
	}
	return []string{windowKey(base, idx)}
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

func windowKey(base string, idx int64) string {
	return base + ":" + strconv.FormatInt(idx, 10)
}
