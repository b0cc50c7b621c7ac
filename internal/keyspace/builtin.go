package keyspace

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/design"
)

// DefaultPrefix starts rlctl's own keys.
const DefaultPrefix = design.DefaultPrefix

// Schema names of other libraries' layouts.
const (
	SchemaEnvoy          = "envoy-ratelimit"
	SchemaRedisRate      = "go-redis-rate"
	SchemaSpring         = "spring-cloud-gateway"
	SchemaKong           = "kong-rate-limiting"
	SchemaUlule          = "ulule-limiter"
	SchemaRateLimitRedis = "rate-limit-redis"
	SchemaFlexible       = "rate-limiter-flexible"
	SchemaPythonLimits   = "python-limits"
	SchemaUpstashWindow  = "upstash-window"
	SchemaUpstashBucket  = "upstash-token-bucket"
)

// ownLayout is one of rlctl's designs' key layouts, as its key schema in
// package design says: <prefix><tag>:{<id>}[:<window index>].
type ownLayout struct {
	alg  string
	keys design.Keys
}

// ownLayouts are rlctl's own designs that write keys, in DESIGN.md order.
var ownLayouts = func() []ownLayout {
	var out []ownLayout
	for _, d := range design.All() {
		if !d.Keys.None() {
			out = append(out, ownLayout{d.Name, d.Keys})
		}
	}
	return out
}()

// interpretValue reads what a key of rlctl's own holds.
func interpretValue(v design.Value) func(s *Schema, k *Key, now time.Time) {
	switch v {
	case design.ValueBucket:
		return interpretOwnBucket
	case design.ValueTAT:
		return interpretOwnGCRA
	case design.ValueLog:
		return interpretLog
	}
	return interpretCounter
}

// builtin returns the built-in schemas with p applied: rlctl's own first,
// then the libraries'.
func builtin(p Params) []*Schema {
	var out []*Schema
	for _, l := range ownLayouts {
		out = append(out, ownSchema(l, p))
	}
	out = append(out,
		envoySchema(p), redisRateSchema(p), springSchema(p), kongSchema(p),
		ululeSchema(p), rateLimitRedisSchema(p), flexibleSchema(p), pythonLimitsSchema(p), upstashWindowSchema(p), upstashBucketSchema(p))
	return out
}

func prefixOr(p Params, def string) string {
	if p.Prefix != "" {
		return p.Prefix
	}
	return def
}

// windowTTL returns a TTL rule of n windows of the published limit.
func windowTTL(n int64) func(s *Schema, k Parsed) time.Duration {
	return func(s *Schema, k Parsed) time.Duration {
		w := k.WindowLen
		if w == 0 {
			w = s.params.Limit.Window
		}
		return time.Duration(n) * w
	}
}

func ownSchema(l ownLayout, p Params) *Schema {
	s := &Schema{
		Name:        l.alg,
		Description: "rlctl " + l.alg,
		Source:      "rlctl internal/design (the design's key schema, written by internal/limiter)",
		Type:        l.keys.Value.Type(),
		Layout:      l.keys.Layout,
		Clock:       "redis or gateway",
		WindowInKey: l.keys.Windowed,
		MultiKey:    l.keys.Previous,
		Prefix:      prefixOr(p, DefaultPrefix),
		params:      p,
		own:         l.keys,
		ttl:         windowTTL(l.keys.TTL.Windows),
		interpret:   interpretValue(l.keys.Value),
	}
	head := l.keys.Tag + ":{"
	s.glob = EscapeGlob(s.Prefix+head) + "*}"
	if l.keys.Windowed {
		s.glob += ":*"
	}
	s.parse = func(s *Schema, key, _ string) (Parsed, bool) {
		// Two cuts rather than one on s.Prefix+head: parse runs for every
		// key an audit scans, and the concatenation allocated each time.
		rest, ok := cutPrefixes(key, s.Prefix, head)
		if !ok {
			return Parsed{}, false
		}
		if !l.keys.Windowed {
			id, ok := strings.CutSuffix(rest, "}")
			if !ok || id == "" {
				return Parsed{}, false
			}
			return Parsed{ID: id, Window: -1}, true
		}
		i := strings.LastIndex(rest, "}:")
		if i <= 0 {
			return Parsed{}, false
		}
		n, ok := parseDigits(rest[i+2:])
		if !ok {
			return Parsed{}, false
		}
		return Parsed{ID: rest[:i], Window: n}, true
	}
	s.idKeys = func(s *Schema, id string) ([]string, []string) {
		base := s.Prefix + head + id + "}"
		if l.keys.Windowed {
			return nil, []string{EscapeGlob(base) + ":*"}
		}
		return []string{base}, nil
	}
	if l.keys.TTL.UntilFull {
		// A bucket or TAT never needs to live longer than a full refill.
		s.maxTTL = func(s *Schema, k Parsed) time.Duration { return bucketSpan(s.params) }
		s.ttl = s.maxTTL
	}
	switch l.keys.Value {
	case design.ValueTAT:
		s.values = func(Parsed, string) string { return "string num" }
	case design.ValueBucket:
		s.values = func(Parsed, string) string { return "hash num tokens ts" }
	}
	return s
}

// bucketSpan is how long an empty bucket takes to fill: capacity/rate.
func bucketSpan(p Params) time.Duration {
	if p.Limit.Count <= 0 {
		return 0
	}
	return time.Duration(float64(p.Limit.Window) * float64(p.burst()) / float64(p.Limit.Count))
}

// envoySchema: envoyproxy/ratelimit, checked against src/limiter/cache_key.go
// (GenerateCacheKey) and src/redis/fixed_cache_impl.go (DoLimit). The key is
// the optional cache-key prefix, the domain, then every descriptor entry as
// key_value, each followed by "_", then the window start in unix seconds
// (now floored to the unit). The value is a plain counter raised with INCRBY
// on every request (denied ones too); EXPIRE is sent with every INCRBY, at
// the unit in seconds plus a random jitter (EXPIRATION_JITTER_MAX_SECONDS).
// Windows follow the ratelimit service's clock; a new window is a new key.
func envoySchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaEnvoy,
		Description: "envoyproxy/ratelimit fixed window",
		Source:      "envoyproxy/ratelimit src/limiter/cache_key.go, src/redis/fixed_cache_impl.go",
		Type:        TypeString,
		Layout:      "<prefix><domain>_<key>_<value>[_<key>_<value>...]_<window start, unix s> string counter; EXPIRE unit + jitter on every hit",
		Clock:       "client",
		WindowInKey: true,
		Prefix:      prefixOr(p, ""),
		params:      p,
		ttl:         windowTTL(1),
		interpret:   interpretCounter,
	}
	s.glob = EscapeGlob(s.Prefix) + "*_*_*_[0-9]*"
	s.parse = func(s *Schema, key, _ string) (Parsed, bool) {
		rest, ok := strings.CutPrefix(key, s.Prefix)
		if !ok {
			return Parsed{}, false
		}
		i := strings.LastIndexByte(rest, '_')
		if i < 0 {
			return Parsed{}, false
		}
		start, ok := parseDigits(rest[i+1:])
		// Window starts are unix seconds: between 2001 and 2286.
		if !ok || start < 1e9 || start >= 1e10 {
			return Parsed{}, false
		}
		head := rest[:i]
		d := strings.IndexByte(head, '_')
		if d <= 0 || strings.Count(head[d+1:], "_") < 1 {
			return Parsed{}, false
		}
		return Parsed{ID: head[d+1:], Part: head[:d], Window: start}, true
	}
	s.idKeys = func(s *Schema, id string) ([]string, []string) {
		return nil, []string{EscapeGlob(s.Prefix) + "*_" + EscapeGlob(id) + "_[0-9]*"}
	}
	s.hasID = envoyHasID
	s.maxTTL = func(s *Schema, k Parsed) time.Duration {
		if s.params.Limit.Window == 0 {
			return 0
		}
		// The default jitter bound is unset (0); allow a generous 5 minutes.
		return s.params.Limit.Window + 5*time.Minute
	}
	return s
}

// envoyHasID: an envoy identity is any descriptor value, or the whole
// key_value chain.
func envoyHasID(p Parsed, id string) bool {
	return p.ID == id || strings.HasSuffix(p.ID, "_"+id) || strings.Contains(p.ID, "_"+id+"_")
}

// redisRateGCRAEpoch is go-redis/redis_rate's TAT epoch: its script keeps
// times as seconds since 2017-01-01 to keep float precision.
const redisRateGCRAEpoch = 1483228800

// redisRateSchema: go-redis/redis_rate v10, checked against rate.go
// (defaultRedisPrefix "rate:", key = prefix + key) and lua.go (allowN:
// GCRA with Redis TIME; the value is the TAT in float seconds since
// 2017-01-01, SET with EX ceil(TAT - now)).
func redisRateSchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaRedisRate,
		Description: "go-redis/redis_rate GCRA",
		Source:      "go-redis/redis_rate rate.go, lua.go",
		Type:        TypeString,
		Layout:      "rate:<key> string TAT (float seconds since 2017-01-01); EX ceil(TAT-now)",
		Clock:       "redis",
		Prefix:      prefixOr(p, "rate:"),
		params:      p,
		interpret:   interpretRedisRate,
		values:      func(Parsed, string) string { return "string num" },
	}
	plainPrefixed(s)
	s.ttl = func(s *Schema, k Parsed) time.Duration { return bucketSpan(s.params) }
	s.maxTTL = func(s *Schema, k Parsed) time.Duration {
		if d := bucketSpan(s.params); d > 0 {
			return d + time.Second // EX rounds up to whole seconds
		}
		return 0
	}
	return s
}

// plainPrefixed makes s a <prefix><id> layout.
func plainPrefixed(s *Schema) {
	s.glob = EscapeGlob(s.Prefix) + "?*"
	s.parse = func(s *Schema, key, _ string) (Parsed, bool) {
		id, ok := strings.CutPrefix(key, s.Prefix)
		if !ok || id == "" {
			return Parsed{}, false
		}
		return Parsed{ID: id, Window: -1}, true
	}
	s.idKeys = func(s *Schema, id string) ([]string, []string) {
		return []string{s.Prefix + id}, nil
	}
}

// springSchema: Spring Cloud Gateway's RedisRateLimiter, checked against
// RedisRateLimiter.java (getKeys: "request_rate_limiter.{" + id + "}.tokens"
// and "}.timestamp", hash-tagged for Cluster) and
// META-INF/scripts/request_rate_limiter.lua (token bucket: tokens left and
// last refill in unix seconds from Redis TIME, both with EXPIRE
// floor(2 * capacity / rate)). Newer releases keep both in one hash
// request_rate_limiter.{id} with fields tokens and timestamp; both forms
// are read.
func springSchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaSpring,
		Description: "Spring Cloud Gateway RedisRateLimiter token bucket",
		Source:      "spring-cloud/spring-cloud-gateway RedisRateLimiter.java, META-INF/scripts/request_rate_limiter.lua",
		Type:        TypeString,
		types:       []string{TypeString, TypeHash},
		Layout:      "request_rate_limiter.{id}.tokens and .timestamp strings (or one hash request_rate_limiter.{id} {tokens, timestamp}); EXPIRE floor(2*capacity/rate) s",
		Clock:       "redis",
		MultiKey:    true,
		Prefix:      prefixOr(p, "request_rate_limiter."),
		params:      p,
		interpret:   interpretSpring,
		values: func(_ Parsed, typ string) string {
			if typ == TypeHash {
				return "hash num tokens timestamp"
			}
			return "string num"
		},
	}
	s.glob = EscapeGlob(s.Prefix) + "{*}*"
	s.parse = func(s *Schema, key, typ string) (Parsed, bool) {
		rest, ok := cutPrefixes(key, s.Prefix, "{")
		if !ok {
			return Parsed{}, false
		}
		for _, part := range []string{"tokens", "timestamp"} {
			if id, ok := strings.CutSuffix(rest, "}."+part); ok && id != "" && typ != TypeHash {
				return Parsed{ID: id, Part: part, Window: -1}, true
			}
		}
		if id, ok := strings.CutSuffix(rest, "}"); ok && id != "" && typ != TypeString {
			return Parsed{ID: id, Part: "bucket", Window: -1}, true
		}
		return Parsed{}, false
	}
	s.idKeys = func(s *Schema, id string) ([]string, []string) {
		b := s.Prefix + "{" + id + "}"
		return []string{b + ".tokens", b + ".timestamp", b}, nil
	}
	s.ttl = func(s *Schema, k Parsed) time.Duration {
		// floor(2 * capacity / rate) seconds.
		if s.params.Limit.Count <= 0 {
			return 0
		}
		sec := int64(2 * bucketSpan(s.params).Seconds())
		return time.Duration(sec) * time.Second
	}
	return s
}

// kongPeriods are Kong's rate-limiting periods and their expirations, from
// kong/plugins/rate-limiting/expiration.lua.
var kongPeriods = map[string]time.Duration{
	"second": time.Second,
	"minute": time.Minute,
	"hour":   time.Hour,
	"day":    24 * time.Hour,
	"month":  2592000 * time.Second,
	"year":   31536000 * time.Second,
}

// kongSchema: Kong's rate-limiting plugin with policy redis, checked against
// kong/plugins/rate-limiting/policies/init.lua (get_local_key:
// "ratelimit:<route_id>:<service_id>:<identifier>:<period_date>:<period>",
// empty ids are the nil UUID; INCR then EXPIRE on the first hit, or
// EXPIREAT period start + expiration when syncing in batches) and
// kong/plugins/rate-limiting/expiration.lua (second 1 ... year 31536000).
// period_date is the period's start in unix milliseconds, from Kong's clock.
func kongSchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaKong,
		Description: "Kong rate-limiting plugin (redis policy)",
		Source:      "Kong/kong kong/plugins/rate-limiting/policies/init.lua, expiration.lua",
		Type:        TypeString,
		Layout:      "ratelimit:<route id>:<service id>:<identifier>:<period start ms>:<period> string counter; TTL = the period's expiration, set on the first hit",
		Clock:       "client",
		WindowInKey: true,
		Prefix:      prefixOr(p, "ratelimit:"),
		params:      p,
		interpret:   interpretCounter,
	}
	s.glob = EscapeGlob(s.Prefix) + "*:*:*:[0-9]*:*"
	s.parse = func(s *Schema, key, _ string) (Parsed, bool) {
		rest, ok := strings.CutPrefix(key, s.Prefix)
		if !ok {
			return Parsed{}, false
		}
		parts := strings.Split(rest, ":")
		// route, service, identifier (may hold colons: IPv6), date, period.
		if len(parts) < 5 {
			return Parsed{}, false
		}
		period := parts[len(parts)-1]
		w, ok := kongPeriods[period]
		if !ok {
			return Parsed{}, false
		}
		start, ok := parseDigits(parts[len(parts)-2])
		if !ok {
			return Parsed{}, false
		}
		id := strings.Join(parts[2:len(parts)-2], ":")
		if id == "" {
			return Parsed{}, false
		}
		return Parsed{ID: id, Part: period, Window: start, WindowLen: w}, true
	}
	s.idKeys = func(s *Schema, id string) ([]string, []string) {
		return nil, []string{EscapeGlob(s.Prefix) + "*:*:" + EscapeGlob(id) + ":[0-9]*:*"}
	}
	s.ttl = func(s *Schema, k Parsed) time.Duration { return k.WindowLen }
	return s
}

// ululeSchema: ulule/limiter's Redis store, checked against
// drivers/store/redis/store.go (key = Prefix + ":" + key, default prefix
// "limiter"; SETNX 1 with the period as expiry on the first hit, INCR
// after, and EXPIRE re-asserted when PTTL says none) . The clock is the
// client's (expiry is relative, so only the Redis clock matters in effect).
func ululeSchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaUlule,
		Description: "ulule/limiter Redis store",
		Source:      "ulule/limiter drivers/store/redis/store.go",
		Type:        TypeString,
		Layout:      "limiter:<key> string counter; expiry = period, set when created (re-set if lost)",
		Clock:       "redis",
		Prefix:      prefixOr(p, "limiter:"),
		params:      p,
		ttl:         windowTTL(1),
		interpret:   interpretCounter,
	}
	plainPrefixed(s)
	return s
}

// rateLimitRedisSchema: express-rate-limit's rate-limit-redis, checked
// against source/lib.ts (key = prefix + client key, default prefix "rl:")
// and source/scripts.ts (INCR, then PEXPIRE windowMs when PTTL < 0, or on
// every hit with resetExpiryOnChange). Keys that are rlctl's own layouts
// (same "rl:" prefix) are not claimed.
func rateLimitRedisSchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaRateLimitRedis,
		Description: "express rate-limit-redis store",
		Source:      "express-rate-limit/rate-limit-redis source/lib.ts, source/scripts.ts",
		Type:        TypeString,
		Layout:      "rl:<client key> string hit counter; PEXPIRE windowMs when missing",
		Clock:       "redis",
		Prefix:      prefixOr(p, "rl:"),
		params:      p,
		ttl:         windowTTL(1),
		interpret:   interpretCounter,
	}
	plainPrefixed(s)
	plain := s.parse
	s.parse = func(s *Schema, key, typ string) (Parsed, bool) {
		if rest, ok := strings.CutPrefix(key, s.Prefix); ok {
			for _, l := range ownLayouts {
				if _, own := cutPrefixes(rest, l.keys.Tag, ":{"); own {
					return Parsed{}, false
				}
			}
		}
		return plain(s, key, typ)
	}
	return s
}

// flexibleSchema: node-rate-limiter-flexible's RateLimiterRedis, checked
// against lib/RateLimiterAbstract.js (getKey: keyPrefix + ":" + key,
// default keyPrefix "rlflx") and lib/RateLimiterRedis.js (SET key 0 EX
// duration NX, then INCRBY points and PTTL, EXPIRE duration again when PTTL
// says none). A consumer over its points with blockDuration set is blocked
// by SET key <consumed> EX blockDuration: the count then exceeds the limit
// and the TTL is the block's, which keys do not record, so no TTL is too
// long for this layout; duration 0 means keys that never expire, by
// choice.
func flexibleSchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaFlexible,
		Description: "rate-limiter-flexible RateLimiterRedis (Node.js)",
		Source:      "animir/node-rate-limiter-flexible lib/RateLimiterAbstract.js, lib/RateLimiterRedis.js",
		Type:        TypeString,
		Layout:      "rlflx:<key> string points consumed; expiry = duration, set when created (a blocked key: the count past the limit, expiry = blockDuration)",
		Clock:       "redis",
		Prefix:      prefixOr(p, "rlflx:"),
		params:      p,
		ttl:         windowTTL(1),
		interpret:   interpretCounter,
	}
	// The longest TTL is a block's, unknown here: never "too long".
	s.maxTTL = func(*Schema, Parsed) time.Duration { return 0 }
	plainPrefixed(s)
	return s
}

// pythonLimitsSchema: the Python limits library's Redis storage (behind
// Flask-Limiter and slowapi), checked against limits/limits.py (key_for:
// "LIMITER/" + identifiers + amount/multiples/granularity joined by "/";
// a month is 30 days, a year 360), limits/storage/redis.py (key prefix
// "LIMITS:"; the sliding window counter's keys are "{key}" and
// "{key}/-1") and its Lua scripts (fixed window: INCRBY, EXPIRE on the
// first hit; sliding window: the current counter is created with twice
// the window, renamed to the previous one when it has less than a window
// left; acquire_moving_window.lua: LPUSH the time, LTRIM to the amount,
// EXPIRE the window). The key names its own limit and window. Releases
// before 3.0 wrote keys without the prefix.
func pythonLimitsSchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaPythonLimits,
		Description: "Python limits storage (Flask-Limiter, slowapi): fixed, sliding and moving windows",
		Source:      "alisaifee/limits limits/limits.py, limits/storage/redis.py, resources/redis/lua_scripts",
		Type:        TypeString,
		Layout:      "LIMITS:LIMITER/<identity>[/<scope>...]/<amount>/<multiples>/<granularity> string counter, TTL = the window; sliding: LIMITS:{LIMITER/...} (TTL up to 2 windows) and LIMITS:{LIMITER/...}/-1; moving: the same name as a list of request times (unix seconds), newest first, trimmed to the amount, TTL = the window",
		Clock:       "redis",
		MultiKey:    true,
		Prefix:      prefixOr(p, "LIMITS:"),
		params:      p,
		types:       []string{TypeString, TypeList},
		interpret: func(s *Schema, k *Key, now time.Time) {
			if k.Type == TypeList {
				interpretMovingWindow(k, now)
				return
			}
			interpretCounter(s, k, now)
		},
		values: func(p Parsed, typ string) string {
			if typ == TypeList {
				return listOfTimes(p.Count) // trimmed to the amount
			}
			return ""
		},
	}
	// Releases before limits 3 wrote no prefix: with the default one, bare
	// LIMITER/ keys are read too.
	bare := p.Prefix == ""
	s.glob = EscapeGlob(s.Prefix) + "*LIMITER/*"
	if bare {
		s.glob = "*LIMITER/*"
	}
	s.parse = func(s *Schema, key, _ string) (Parsed, bool) {
		rest, ok := strings.CutPrefix(key, s.Prefix)
		if !ok && bare && (strings.HasPrefix(key, "LIMITER/") || strings.HasPrefix(key, "{LIMITER/")) {
			rest, ok = key, true
		}
		if !ok {
			return Parsed{}, false
		}
		part := ""
		if strings.HasPrefix(rest, "{") {
			part = "current"
			if r, ok := strings.CutSuffix(rest, "/-1"); ok {
				rest, part = r, "previous"
			}
			r, ok := strings.CutSuffix(rest[1:], "}")
			if !ok {
				return Parsed{}, false
			}
			rest = r
		}
		rest, ok = strings.CutPrefix(rest, "LIMITER/")
		if !ok {
			return Parsed{}, false
		}
		f := strings.Split(rest, "/")
		if len(f) < 4 {
			return Parsed{}, false
		}
		amount, ok1 := parseDigits(f[len(f)-3])
		multiples, ok2 := parseDigits(f[len(f)-2])
		unit, ok3 := pythonGranularities[f[len(f)-1]]
		if !ok1 || !ok2 || !ok3 || amount <= 0 || multiples <= 0 || f[0] == "" {
			return Parsed{}, false
		}
		scope := strings.Join(f[1:len(f)-3], "/")
		if part != "" && scope != "" {
			part = scope + " " + part
		} else if part == "" {
			part = scope
		}
		return Parsed{ID: f[0], Part: part, Window: -1, WindowLen: time.Duration(multiples) * unit, Count: amount}, true
	}
	s.idKeys = func(s *Schema, id string) ([]string, []string) {
		prefixes := []string{EscapeGlob(s.Prefix)}
		if bare {
			prefixes = append(prefixes, "")
		}
		var globs []string
		for _, p := range prefixes {
			globs = append(globs, p+"LIMITER/"+EscapeGlob(id)+"/*", p+"{LIMITER/"+EscapeGlob(id)+"/*")
		}
		return nil, globs
	}
	s.ttl = func(s *Schema, k Parsed) time.Duration {
		if strings.HasSuffix(k.Part, "current") {
			return 2 * k.WindowLen
		}
		return k.WindowLen
	}
	return s
}

// interpretMovingWindow reads the limits library's moving window: a list
// of request times in unix seconds (LPUSH, so newest first), trimmed to
// the limit. The entries within the key's window are what it has used; the
// oldest of them frees a slot when it ages out.
func interpretMovingWindow(k *Key, now time.Time) {
	w, lim := k.parsed.WindowLen, k.parsed.Count
	from := float64(now.Add(-w).UnixNano()) / 1e9
	var used int64
	oldest := 0.0
	for _, v := range k.items {
		ts, err := strconv.ParseFloat(v, 64)
		if err != nil {
			k.problem("value out of range: list entry %q is not a time", v)
			continue
		}
		if ts >= from {
			used++
			oldest = ts
		}
	}
	k.Used, k.Limit = ptr(used), ptr(lim)
	msg := fmt.Sprintf("%d of %d used in the last %s (moving window)", used, lim, human(w))
	if used >= lim && oldest > 0 {
		wait := max(int64((oldest+w.Seconds())*1000)-now.UnixMilli(), 0)
		k.RetryMillis = ptr(wait)
		msg += fmt.Sprintf(", next request allowed in %s", human(time.Duration(wait)*time.Millisecond))
	}
	if k.Entries != nil && *k.Entries > lim {
		k.problem("value out of range: %d entries, the layout trims to %d", *k.Entries, lim)
	}
	k.Meaning = msg
}

// pythonGranularities are the limits library's units.
var pythonGranularities = map[string]time.Duration{
	"second": time.Second, "minute": time.Minute, "hour": time.Hour,
	"day": 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 360 * 24 * time.Hour,
}

// upstashWindowSchema: Upstash ratelimit's fixedWindow, slidingWindow and
// cachedFixedWindow, checked against src/single.ts (key =
// [prefix, identifier].join(":") then ":" + floor(now_ms / window); the
// sliding window reads the previous window's key too) and
// src/lua-scripts/single.ts (INCRBY; PEXPIRE window on the first hit for
// fixed windows, window*2+1000 for sliding ones). MultiRegionRatelimit
// (src/multi.ts, src/lua-scripts/multi.ts) names its keys the same way in
// every region's database but keeps a hash of request id to tokens
// (HSET; negative tokens are refunds), with the same TTLs; older versions
// of its fixed-window script never set the TTL. Default prefix
// "@upstash/ratelimit"; the clock is the client's (Date.now()).
func upstashWindowSchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaUpstashWindow,
		Description: "Upstash ratelimit fixed/sliding window (single or multi-region)",
		Source:      "upstash/ratelimit-js src/single.ts, src/multi.ts, src/lua-scripts/single.ts, src/lua-scripts/multi.ts",
		Type:        TypeString,
		Layout:      "@upstash/ratelimit:<id>:<floor(now_ms/W)> string counter (multi-region: hash {request id: tokens} per region); PEXPIRE W (fixed) or 2W+1s (sliding) on the first hit",
		Clock:       "client",
		WindowInKey: true,
		MultiKey:    true,
		Prefix:      prefixOr(p, "@upstash/ratelimit:"),
		params:      p,
		interpret:   interpretUpstashWindow,
		types:       []string{TypeString, TypeHash},
		fits:        func(k *Key) bool { return !isUpstashBucket(k) },
		values: func(_ Parsed, typ string) string {
			if typ == TypeHash {
				return "hash int" // request id → tokens
			}
			return ""
		},
	}
	s.glob = EscapeGlob(s.Prefix) + "*:[0-9]*"
	s.parse = func(s *Schema, key, _ string) (Parsed, bool) {
		rest, ok := strings.CutPrefix(key, s.Prefix)
		if !ok {
			return Parsed{}, false
		}
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return Parsed{}, false
		}
		n, ok := parseDigits(rest[i+1:])
		if !ok {
			return Parsed{}, false
		}
		return Parsed{ID: rest[:i], Window: n}, true
	}
	s.idKeys = func(s *Schema, id string) ([]string, []string) {
		return nil, []string{EscapeGlob(s.Prefix+id) + ":[0-9]*"}
	}
	// Fixed and sliding windows share key names; repair gives the sliding
	// window's longer TTL, so a previous window is never cut short (on a
	// fixed window's key the extra time is harmless: its index is never
	// used again).
	s.maxTTL = func(s *Schema, k Parsed) time.Duration {
		if w := s.params.Limit.Window; w > 0 {
			return 2*w + time.Second
		}
		return 0
	}
	s.ttl = s.maxTTL
	return s
}

// upstashBucketSchema: Upstash ratelimit's tokenBucket, checked against
// src/single.ts (key = [prefix, identifier].join(":")) and
// src/lua-scripts/single.ts (hash {refilledAt (ms), tokens}; refills
// refillRate per interval, whole intervals only; PEXPIRE
// ceil((max - remaining)/refillRate) * interval).
func upstashBucketSchema(p Params) *Schema {
	s := &Schema{
		Name:        SchemaUpstashBucket,
		Description: "Upstash ratelimit token bucket",
		Source:      "upstash/ratelimit-js src/single.ts, src/lua-scripts/single.ts",
		Type:        TypeHash,
		Layout:      "@upstash/ratelimit:<id> hash {refilledAt (ms), tokens}; PEXPIRE time to refill",
		Clock:       "client",
		Prefix:      prefixOr(p, "@upstash/ratelimit:"),
		params:      p,
		interpret:   interpretUpstashBucket,
		fits:        isUpstashBucket,
		values:      func(Parsed, string) string { return "hash num refilledAt tokens" },
	}
	plainPrefixed(s)
	s.ttl = func(s *Schema, k Parsed) time.Duration { return bucketSpan(s.params) }
	return s
}

// isUpstashBucket tells a token bucket's hash from a multi-region window's
// (both may be named prefix:<id>:<digits>): only the bucket has
// refilledAt and tokens.
func isUpstashBucket(k *Key) bool {
	_, at := k.Fields["refilledAt"]
	_, tokens := k.Fields["tokens"]
	return k.Type == TypeHash && (at || tokens)
}

// parseDigits reads a window index or start: ASCII digits only (no sign),
// as limiters write them.
// cutPrefixes is strings.CutPrefix(s, a+b) without building a+b.
func cutPrefixes(s, a, b string) (string, bool) {
	rest, ok := strings.CutPrefix(s, a)
	if !ok {
		return s, false
	}
	return strings.CutPrefix(rest, b)
}

func parseDigits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}
