package design

import "strconv"

// Keys is a design's key schema: what it writes under the prefix, for the
// limiter that writes it and for `keys`, `audit` and counts_lost, which
// read it back.
type Keys struct {
	// Tag names the design in its keys: <prefix><tag>:{<id>}, the braces
	// a Redis Cluster hash tag, so every key of one identity lands in one
	// slot and a script may touch all of them.
	Tag string
	// Windowed designs append ":<window index>" (floor(now_ms/W_ms)) to
	// that base key: a new window is a new key.
	Windowed bool
	// Previous: a decision reads the previous window's key beside the
	// current one (the sliding-window counter's blend).
	Previous bool
	// Value is what each key holds.
	Value Value
	// TTL is how long a key lives.
	TTL TTL
	// Layout says it in a line with the default prefix, for `keys` and
	// `audit`.
	Layout string
}

// Value is what a design's key holds.
type Value int

// The values. The zero Value is unset: a design with keys must say.
const (
	_ Value = iota
	// ValueCounter: a string integer, the requests counted in the window.
	ValueCounter
	// ValueBudget: a string integer, the budget granted in the window.
	ValueBudget
	// ValueBucket: a hash {tokens (float), ts (ms)}.
	ValueBucket
	// ValueLog: a sorted set, one member per admitted request, scored by
	// its time in ms; memory grows with traffic.
	ValueLog
	// ValueTAT: a string float, the theoretical arrival time in ms since
	// the Unix epoch.
	ValueTAT
)

// Type is the Redis type of a key holding v.
func (v Value) Type() string {
	switch v {
	case ValueBucket:
		return "hash"
	case ValueLog:
		return "zset"
	case ValueCounter, ValueBudget, ValueTAT:
		return "string"
	}
	return ""
}

// Counts reports whether v is a count a published limit bounds (a
// counter, a granted budget), not a bucket's tokens or a time.
func (v Value) Counts() bool { return v == ValueCounter || v == ValueBudget }

// TTL is a key's expiry rule.
type TTL struct {
	// Windows: a key lives this many windows of the published limit.
	Windows int64
	// UntilFull: a key lives until its bucket would be full again
	// (capacity over rate); past that a missing key says the same.
	UntilFull bool
}

// None reports whether k describes no keys (state in the gateways'
// memory).
func (k Keys) None() bool { return k.Tag == "" }

// Pattern is a SCAN glob matching every key of k under prefix, like
// "rl:fw:{*}" or "rl:cw:{*}:*" ("" when k has none). The prefix is not
// escaped: rlctl's prefixes hold no glob characters.
func (k Keys) Pattern(prefix string) string {
	if k.None() {
		return ""
	}
	p := prefix + k.Tag + ":{*}"
	if k.Windowed {
		p += ":*"
	}
	return p
}

// Base is one identity's base key, "<prefix><tag>:{<id>}".
func (k Keys) Base(prefix, id string) string {
	b := make([]byte, 0, len(prefix)+len(k.Tag)+len(id)+3)
	b = append(b, prefix...)
	b = append(b, k.Tag...)
	b = append(b, ':', '{')
	b = append(b, id...)
	b = append(b, '}')
	return string(b)
}

// Of returns the keys one identity's decision touches in window idx (the
// one holding the window's state first); nil when k has none.
func (k Keys) Of(prefix, id string, idx int64) []string {
	if k.None() {
		return nil
	}
	base := k.Base(prefix, id)
	if !k.Windowed {
		return []string{base}
	}
	out := []string{windowKey(base, idx)}
	if k.Previous {
		out = append(out, windowKey(base, idx-1))
	}
	return out
}

func windowKey(base string, idx int64) string {
	return base + ":" + strconv.FormatInt(idx, 10)
}
