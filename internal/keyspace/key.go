package keyspace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlctl/rlctl/internal/design"
)

// Key is one limiter key's state, read and interpreted. Its JSON form is
// stable: field names are part of rlctl's output contract.
type Key struct {
	// Key is the Redis key name.
	Key string `json:"key"`
	// Schema is the layout the key was read as; empty when no schema
	// claims it.
	Schema string `json:"schema"`
	// ID is the identity as the schema names it.
	ID string `json:"id,omitempty"`
	// Part distinguishes an identity's keys (Spring "tokens", Kong "minute").
	Part string `json:"part,omitempty"`
	// Type is the Redis type ("string", "hash", "zset", ...; "none" when the
	// key vanished while being read).
	Type string `json:"type"`
	// TTLMillis is PTTL: -1 when the key has no expiry.
	TTLMillis int64 `json:"ttl_ms"`
	// Value is a string key's raw value.
	Value *string `json:"value,omitempty"`
	// Fields is a hash key's raw fields.
	Fields map[string]string `json:"fields,omitempty"`
	// Entries is a sorted set's cardinality.
	Entries *int64 `json:"entries,omitempty"`
	// Bytes is MEMORY USAGE, when read.
	Bytes *int64 `json:"bytes,omitempty"`
	// Meaning says what the state means in the schema's terms, e.g.
	// "87 of 100 used, window resets in 23s".
	Meaning string `json:"meaning"`
	// Used is the count spent in the key's window, when the layout counts.
	Used *int64 `json:"used,omitempty"`
	// Limit is the published limit used for the interpretation, when known.
	Limit *int64 `json:"limit,omitempty"`
	// Tokens is a bucket's tokens now (refilled to the Redis clock).
	Tokens *float64 `json:"tokens,omitempty"`
	// ResetMillis is how long until the identity is back to its full
	// allowance (window end, bucket full), when known.
	ResetMillis *int64 `json:"reset_ms,omitempty"`
	// RetryMillis is how long until the next request would be allowed
	// (0 when it would be allowed now), when known.
	RetryMillis *int64 `json:"retry_after_ms,omitempty"`
	// Problems lists what is wrong with the key: no TTL, a TTL longer than
	// the schema allows, a value out of range, the wrong type.
	Problems []string `json:"problems"`

	parsed Parsed
	schema *Schema
	// inWindow is a log's entries inside the last window (-1 unknown).
	inWindow int64
	newest   float64
	// items is a list's entries, newest first (at most maxListRead).
	items []string
}

// maxListRead bounds how much of a list inspect reads: list layouts trim
// themselves to the limit, so more means the key is not what it seems.
const maxListRead = 10000

// Parsed returns the key name read against its schema.
func (k *Key) Parsed() Parsed { return k.parsed }

func (k *Key) problem(format string, args ...any) {
	k.Problems = append(k.Problems, fmt.Sprintf(format, args...))
}

// ServerTime reads Redis TIME: every interpretation uses the server's
// clock, since that is the clock TTLs run on.
func ServerTime(ctx context.Context, c redis.UniversalClient) (time.Time, error) {
	t, err := c.Time(ctx).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("read Redis TIME: %w", err)
	}
	return t, nil
}

// ReadKeys reads and interprets keys with pipelined commands: TYPE and
// PTTL first, then the value in the way its type needs. Keys that no
// longer exist are left out. schemas decide how keys are read; a key no
// schema claims is still shown, uninterpreted. Keys the connected ACL
// user may not read are left out too, and make the error a
// *PermissionError beside the keys read.
func ReadKeys(ctx context.Context, c redis.Cmdable, schemas []*Schema, keys []string, now time.Time) ([]*Key, error) {
	out, no, err := readKeys(ctx, c, schemas, keys, now)
	if err != nil {
		return nil, err
	}
	var d denied
	d.add(no...)
	return out, d.err("read keys", false)
}

// readKeys is ReadKeys that returns apart the keys the connected ACL user
// may not read, instead of failing on them.
func readKeys(ctx context.Context, c redis.Cmdable, schemas []*Schema, keys []string, now time.Time) (out []*Key, no []string, err error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	pipe := c.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k)
		ttls[i] = pipe.PTTL(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	for i, name := range keys {
		if err := errors.Join(types[i].Err(), ttls[i].Err()); IsNoPerm(err) {
			no = append(no, name)
			continue
		} else if err != nil {
			return nil, nil, fmt.Errorf("read key types and TTLs: %w", err)
		}
		typ := types[i].Val()
		if typ == "none" {
			continue
		}
		k := &Key{Key: name, Type: typ, TTLMillis: pttlMillis(ttls[i].Val()), Problems: []string{}, inWindow: -1}
		if s, p, ok := Match(schemas, name, typ); ok {
			k.schema, k.parsed = s, p
			k.Schema, k.ID, k.Part = s.Name, p.ID, p.Part
		}
		out = append(out, k)
	}
	if err := readValues(ctx, c, out, now); err != nil {
		return nil, nil, err
	}
	for _, k := range out {
		rematch(schemas, k)
		Interpret(k, now)
	}
	return out, no, nil
}

// pttlMillis turns go-redis's PTTL duration into Redis's own numbers:
// -1 no expiry, -2 no key, else milliseconds.
func pttlMillis(d time.Duration) int64 {
	if d < 0 {
		return int64(d) // go-redis keeps -1 and -2 as raw values
	}
	return d.Milliseconds()
}

func readValues(ctx context.Context, c redis.Cmdable, keys []*Key, now time.Time) error {
	pipe := c.Pipeline()
	type pending struct {
		str              *redis.StringCmd
		hash             *redis.MapStringStringCmd
		card, mem, inWin *redis.IntCmd
		newest           *redis.ZSliceCmd
		list             *redis.StringSliceCmd
	}
	ps := make([]pending, len(keys))
	for i, k := range keys {
		switch k.Type {
		case TypeString:
			ps[i].str = pipe.Get(ctx, k.Key)
		case TypeHash:
			ps[i].hash = pipe.HGetAll(ctx, k.Key)
		case TypeList:
			ps[i].card = pipe.LLen(ctx, k.Key)
			ps[i].list = pipe.LRange(ctx, k.Key, 0, maxListRead-1)
		case TypeZSet:
			ps[i].card = pipe.ZCard(ctx, k.Key)
			ps[i].mem = pipe.MemoryUsage(ctx, k.Key)
			ps[i].newest = pipe.ZRangeWithScores(ctx, k.Key, -1, -1)
			if k.schema != nil && k.schema.params.Limit.Window > 0 {
				from := now.Add(-k.schema.params.Limit.Window).UnixMilli()
				ps[i].inWin = pipe.ZCount(ctx, k.Key, "("+strconv.FormatInt(from, 10), "+inf")
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		// A key deleted between the two reads answers nil; anything else is
		// a real failure.
		return fmt.Errorf("read key values: %w", err)
	}
	for i, k := range keys {
		p := ps[i]
		switch {
		case p.str != nil:
			if v, err := p.str.Result(); err == nil {
				k.Value = &v
			}
		case p.hash != nil:
			k.Fields = p.hash.Val()
		case p.list != nil:
			n := p.card.Val()
			k.Entries = &n
			k.items = p.list.Val()
		case p.card != nil:
			n := p.card.Val()
			k.Entries = &n
			if m, err := p.mem.Result(); err == nil {
				k.Bytes = &m
			}
			if z := p.newest.Val(); len(z) == 1 {
				k.newest = z[0].Score
			}
			if p.inWin != nil {
				k.inWindow = p.inWin.Val()
			}
		}
	}
	return nil
}

// Interpret fills k's meaning and problems from its raw state.
func Interpret(k *Key, now time.Time) {
	if k.schema == nil {
		k.Meaning = "not a known limiter layout"
		if k.TTLMillis == -1 {
			k.problem("no TTL")
		}
		return
	}
	s := k.schema
	if k.TTLMillis == -1 {
		k.problem("no TTL: counts forever")
	} else if max := s.MaxTTL(k.parsed); max > 0 && k.TTLMillis > max.Milliseconds()+1000 {
		k.problem("TTL %s longer than the schema allows (%s)", human(time.Duration(k.TTLMillis)*time.Millisecond), human(max))
	}
	s.interpret(s, k, now)
}

// human prints a duration the way an on-call engineer reads it: tenths of
// a second below 10s, whole seconds above.
func human(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < 10*time.Second {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func ptr[T any](v T) *T { return &v }

// windowReset is how long until the key's window ends: from the window
// index or start in the key when the window length is known, else the TTL.
func windowReset(s *Schema, k *Key, now time.Time) (time.Duration, bool) {
	p := k.parsed
	w := p.WindowLen
	if w == 0 {
		w = s.params.Limit.Window
	}
	if p.Window >= 0 && w > 0 {
		var end time.Time
		switch s.Name {
		case SchemaEnvoy: // window start in unix seconds
			end = time.Unix(p.Window, 0).Add(w)
		case SchemaKong: // period start in unix ms
			end = time.UnixMilli(p.Window).Add(w)
		default: // window index: floor(now/W)
			end = time.UnixMilli((p.Window + 1) * w.Milliseconds())
		}
		return end.Sub(now), true
	}
	if k.TTLMillis >= 0 {
		return time.Duration(k.TTLMillis) * time.Millisecond, true
	}
	return 0, false
}

// interpretCounter reads a window counter: "87 of 100 used, window resets
// in 23s".
func interpretCounter(s *Schema, k *Key, now time.Time) {
	if k.Value == nil {
		k.Meaning = "value vanished while reading"
		return
	}
	n, err := strconv.ParseInt(*k.Value, 10, 64)
	if err != nil {
		k.problem("value out of range: %q is not an integer counter", *k.Value)
		k.Meaning = "unreadable counter"
		return
	}
	if n < 0 {
		k.problem("value out of range: negative counter %d", n)
	}
	describeCount(s, k, n, now)
}

// countsDenied lists the layouts whose counters count denied hits too, so
// a counter above the limit only means the identity kept knocking.
var countsDenied = map[string]bool{
	SchemaKong: true, SchemaEnvoy: true, SchemaRateLimitRedis: true, SchemaUpstashWindow: true,
	SchemaUlule: true, SchemaFlexible: true, SchemaPythonLimits: true,
}

// describeCount says what a window's count n means: used against the
// limit, the window, and when it resets.
func describeCount(s *Schema, k *Key, n int64, now time.Time) {
	k.Used = &n
	var msg string
	lim := s.params.Limit.Count
	if k.parsed.Count > 0 {
		lim = k.parsed.Count // the key names its own limit
	}
	if lim > 0 {
		k.Limit = &lim
		msg = fmt.Sprintf("%d of %d used", n, lim)
		if countsDenied[s.Name] {
			if n > lim {
				msg = fmt.Sprintf("%d hits, limit %d (over by %d)", n, lim, n-lim)
			}
		} else if n > lim && isOwn(s) {
			k.problem("value out of range: %d above the limit %d", n, lim)
		}
	} else {
		msg = fmt.Sprintf("%d counted (limit unknown: pass --limit)", n)
	}
	if s.own.Value == design.ValueBudget {
		msg = "budget granted: " + msg
	}
	if k.parsed.Window >= 0 && s.Name != SchemaEnvoy && s.Name != SchemaKong {
		msg += fmt.Sprintf(" in window #%d", k.parsed.Window)
	}
	if d, ok := windowReset(s, k, now); ok {
		if d <= 0 {
			msg += ", window already over"
		} else {
			msg += ", window resets in " + human(d)
		}
		k.ResetMillis = ptr(max(d, 0).Milliseconds())
	} else {
		msg += ", never resets (no TTL)"
	}
	k.Meaning = msg
}

// interpretUpstashWindow reads both of Upstash's window layouts: the
// single-region counter (a string), and MultiRegionRatelimit's hash of
// request id to tokens, which each region's database holds a copy of. A
// region answers from its own copy and the others' requests are copied in
// afterwards, so copies can differ for a while; the count shown is this
// copy's.
func interpretUpstashWindow(s *Schema, k *Key, now time.Time) {
	if k.Type != TypeHash {
		interpretCounter(s, k, now)
		return
	}
	var n int64
	for id, v := range k.Fields {
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			// Negative values are refunds; only a non-integer is wrong.
			k.problem("value out of range: request %q holds %q, not a token count", id, v)
			continue
		}
		n += t
	}
	describeCount(s, k, n, now)
	k.Meaning = fmt.Sprintf("multi-region copy, %d requests: %s", len(k.Fields), k.Meaning)
}

// isOwn reports whether s is one of rlctl's own layouts (checked by
// description, since ownLayouts refers back to the interpreters).
func isOwn(s *Schema) bool { return strings.HasPrefix(s.Description, "rlctl ") }

func parseFloatField(k *Key, name, raw string) (float64, bool) {
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		k.problem("value out of range: field %s %q is not a number", name, raw)
		return 0, false
	}
	return v, true
}

// bucketNow refills a bucket of tokens, last updated at ts, to now.
func bucketNow(s *Schema, k *Key, tokens float64, ts, now time.Time) {
	p := s.params
	capacity := float64(p.burst())
	if p.Limit.Count <= 0 {
		k.Tokens = &tokens
		k.Meaning = fmt.Sprintf("%s tokens as of %s ago (refill unknown: pass --limit)", fmtTokens(tokens), human(now.Sub(ts)))
		if tokens < 0 {
			k.problem("value out of range: negative tokens %s", fmtTokens(tokens))
		}
		return
	}
	if tokens < 0 || tokens > capacity+1e-9 {
		k.problem("value out of range: %s tokens outside 0..%d", fmtTokens(tokens), p.burst())
	}
	perMs := float64(p.Limit.Count) / float64(p.Limit.Window.Milliseconds())
	elapsed := float64(now.Sub(ts).Milliseconds())
	cur := math.Min(capacity, tokens+math.Max(0, elapsed)*perMs)
	k.Tokens = &cur
	k.Limit = ptr(p.burst())
	full := time.Duration((capacity - cur) / perMs * float64(time.Millisecond))
	k.ResetMillis = ptr(full.Milliseconds())
	retry := time.Duration(0)
	if cur < 1 {
		retry = time.Duration((1 - cur) / perMs * float64(time.Millisecond))
	}
	k.RetryMillis = ptr(retry.Milliseconds())
	if full <= 0 {
		k.Meaning = fmt.Sprintf("%s tokens, full", fmtTokens(cur))
	} else {
		k.Meaning = fmt.Sprintf("%s tokens, full in %s", fmtTokens(cur), human(full))
	}
	if retry > 0 {
		k.Meaning += ", next request allowed in " + human(retry)
	}
}

func fmtTokens(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// interpretOwnBucket reads rlctl's token bucket hash {tokens, ts (ms)}.
func interpretOwnBucket(s *Schema, k *Key, now time.Time) {
	tok, ts, ok := k.Fields["tokens"], k.Fields["ts"], true
	if tok == "" || ts == "" {
		k.problem("value out of range: bucket lacks tokens or ts")
		k.Meaning = "incomplete bucket"
		return
	}
	tokens, ok1 := parseFloatField(k, "tokens", tok)
	msTS, ok2 := parseFloatField(k, "ts", ts)
	if !(ok && ok1 && ok2) {
		k.Meaning = "unreadable bucket"
		return
	}
	bucketNow(s, k, tokens, time.UnixMilli(int64(msTS)), now)
}

// interpretSpring reads Spring's token bucket: either key of the
// two-string layout, or the hash.
func interpretSpring(s *Schema, k *Key, now time.Time) {
	switch k.parsed.Part {
	case "tokens":
		if k.Value == nil {
			return
		}
		if v, ok := parseFloatField(k, "tokens", *k.Value); ok {
			k.Tokens = &v
			k.Meaning = fmt.Sprintf("%s tokens left at the last request", fmtTokens(v))
			if v < 0 || (s.params.Limit.Count > 0 && v > float64(s.params.burst())) {
				k.problem("value out of range: %s tokens outside 0..capacity", fmtTokens(v))
			}
		}
	case "timestamp":
		if k.Value == nil {
			return
		}
		if v, ok := parseFloatField(k, "timestamp", *k.Value); ok {
			k.Meaning = fmt.Sprintf("last refill %s ago (Redis TIME, seconds)", human(now.Sub(time.Unix(int64(v), 0))))
		}
	default:
		tokens, ok1 := parseFloatField(k, "tokens", k.Fields["tokens"])
		sec, ok2 := parseFloatField(k, "timestamp", k.Fields["timestamp"])
		if ok1 && ok2 {
			bucketNow(s, k, tokens, time.Unix(int64(sec), 0), now)
		} else {
			k.Meaning = "unreadable bucket"
		}
	}
}

// interpretUpstashBucket reads Upstash's token bucket: whole refills of
// refillRate (here Limit.Count) per interval (Limit.Window).
func interpretUpstashBucket(s *Schema, k *Key, now time.Time) {
	tokens, ok1 := parseFloatField(k, "tokens", k.Fields["tokens"])
	at, ok2 := parseFloatField(k, "refilledAt", k.Fields["refilledAt"])
	if !ok1 || !ok2 {
		k.Meaning = "unreadable bucket"
		return
	}
	p := s.params
	if p.Limit.Count <= 0 {
		k.Tokens = &tokens
		k.Meaning = fmt.Sprintf("%s tokens at the last refill %s ago (refill unknown: pass --limit)", fmtTokens(tokens), human(now.Sub(time.UnixMilli(int64(at)))))
		return
	}
	iv := p.Limit.Window.Milliseconds()
	nowMs := float64(now.UnixMilli())
	if nowMs >= at+float64(iv) {
		n := math.Floor((nowMs - at) / float64(iv))
		tokens = math.Min(float64(p.burst()), tokens+n*float64(p.Limit.Count))
		at += n * float64(iv)
	}
	k.Tokens = &tokens
	k.Limit = ptr(p.burst())
	next := time.Duration(at+float64(iv)-nowMs) * time.Millisecond
	k.Meaning = fmt.Sprintf("%s of %d tokens, next refill of %d in %s", fmtTokens(tokens), p.burst(), p.Limit.Count, human(next))
	if tokens < 1 {
		k.RetryMillis = ptr(next.Milliseconds())
	} else {
		k.RetryMillis = ptr(int64(0))
	}
}

// gcraState explains a theoretical arrival time: with the limit known,
// how many requests a burst may still take and when the next is allowed.
func gcraState(s *Schema, k *Key, tat, now time.Time) {
	p := s.params
	ahead := tat.Sub(now)
	if ahead < 0 {
		ahead = 0
	}
	k.ResetMillis = ptr(ahead.Milliseconds())
	if p.Limit.Count <= 0 {
		k.Meaning = fmt.Sprintf("fully reset in %s (GCRA; pass --limit for the next allowed request)", human(ahead))
		return
	}
	if span := bucketSpan(p); ahead > span+time.Second {
		k.problem("value out of range: TAT %s ahead, beyond the burst span %s", human(ahead), human(span))
	}
	t := p.Limit.Interval()
	// A request is allowed once TAT + T - burst*T <= now.
	retry := ahead + t - time.Duration(p.burst())*t
	if retry < 0 {
		retry = 0
	}
	k.RetryMillis = ptr(retry.Milliseconds())
	left := p.burst() - int64(math.Ceil(float64(ahead)/float64(t)))
	k.Limit = ptr(p.burst())
	if retry > 0 {
		k.Meaning = fmt.Sprintf("next request allowed in %s (GCRA), fully reset in %s", human(retry), human(ahead))
	} else {
		k.Meaning = fmt.Sprintf("%d of %d available now (GCRA), fully reset in %s", max(left, 0), p.burst(), human(ahead))
	}
}

// interpretOwnGCRA reads rlctl's TAT in unix milliseconds (seconds are
// accepted too, recognised by magnitude).
func interpretOwnGCRA(s *Schema, k *Key, now time.Time) {
	if k.Value == nil {
		return
	}
	v, ok := parseFloatField(k, "TAT", *k.Value)
	if !ok {
		k.Meaning = "unreadable TAT"
		return
	}
	var tat time.Time
	if v > 1e11 {
		tat = time.UnixMilli(int64(v))
	} else {
		tat = time.Unix(0, int64(v*1e9))
	}
	gcraState(s, k, tat, now)
}

// interpretRedisRate reads go-redis/redis_rate's TAT: float seconds since
// 2017-01-01.
func interpretRedisRate(s *Schema, k *Key, now time.Time) {
	if k.Value == nil {
		return
	}
	v, ok := parseFloatField(k, "TAT", *k.Value)
	if !ok {
		k.Meaning = "unreadable TAT"
		return
	}
	tat := time.Unix(redisRateGCRAEpoch, 0).Add(time.Duration(v * float64(time.Second)))
	gcraState(s, k, tat, now)
}

// interpretLog reads a sliding log: its size, and with the limit known how
// many entries fall in the last window.
func interpretLog(s *Schema, k *Key, now time.Time) {
	if k.Entries == nil {
		return
	}
	msg := fmt.Sprintf("log holds %d entries", *k.Entries)
	if k.Bytes != nil {
		msg += fmt.Sprintf(" (%s)", humanBytes(*k.Bytes))
	}
	if lim := s.params.Limit.Count; lim > 0 && k.inWindow >= 0 {
		k.Used, k.Limit = ptr(k.inWindow), ptr(lim)
		msg += fmt.Sprintf(", %d of %d used in the last %s", k.inWindow, lim, human(s.params.Limit.Window))
		if k.newest > 0 && k.inWindow >= lim {
			// The oldest entry inside the window must age out first; the
			// newest bounds when the log is empty.
			k.ResetMillis = ptr(max(int64(k.newest)+s.params.Limit.Window.Milliseconds()-now.UnixMilli(), 0))
		}
	}
	k.Meaning = msg
}
