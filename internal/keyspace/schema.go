package keyspace

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

// Redis value types a schema can use.
const (
	TypeString = "string"
	TypeHash   = "hash"
	TypeZSet   = "zset"
	TypeList   = "list"
)

// Params are what keys do not record about their limiter: the published
// limit, a bucket's capacity, a non-default prefix. Zero values mean
// unknown; interpretations then say so instead of guessing.
type Params struct {
	// Limit is the published limit (L per W). Most layouts do not store it.
	Limit rate.Limit
	// Burst is a token bucket's or GCRA's capacity; 0 means Limit.Count.
	Burst int64
	// Prefix replaces the schema's default key prefix when not empty.
	Prefix string
}

func (p Params) burst() int64 {
	if p.Burst > 0 {
		return p.Burst
	}
	return p.Limit.Count
}

// Parsed is a key name read against a schema.
type Parsed struct {
	Key string
	// ID is the identity the key belongs to, as the schema names it (for
	// envoy the descriptor entries, for Kong the identifier).
	ID string
	// Part tells keys of one identity apart when a layout has several
	// (Spring's "tokens" and "timestamp", Kong's period name).
	Part string
	// Window is the window index or start carried in the key, or -1.
	Window int64
	// WindowLen is the window length the key itself implies (Kong's period),
	// or 0 when the key does not say.
	WindowLen time.Duration
	// Count is the limit the key itself names (Python limits: "100/1/minute"),
	// or 0 when the key does not say.
	Count int64
}

// Schema is one limiter's key layout: how keys are named, what they hold,
// how long they should live and how to read them.
type Schema struct {
	// Name selects the schema (--schema NAME); rlctl's own are the
	// algorithm names.
	Name string
	// Description says whose layout this is, in a few words.
	Description string
	// Source is the upstream file the layout was checked against.
	Source string
	// Type is the Redis value type of the layout's main key; a layout with
	// several keys lists the others in Layout.
	Type string
	// Layout describes the key pattern, values and TTL rule for humans.
	Layout string
	// Clock says whose clock decides windows: "redis", "client" or "none".
	Clock string
	// WindowInKey means a new window is a new key, so a TTL that is pushed
	// out on every request is harmless (envoy, Kong, clock windows).
	WindowInKey bool
	// MultiKey means one decision touches several keys of an identity,
	// which must share a Cluster slot or the script fails with CROSSSLOT.
	MultiKey bool
	// Prefix is the key prefix in use (default or overridden).
	Prefix string

	params Params
	// own is the key schema of one of rlctl's designs (package design);
	// zero for another library's layout.
	own design.Keys
	// parse reads a key name; typ is the Redis type when known, else "".
	parse func(s *Schema, key, typ string) (Parsed, bool)
	// idKeys lists an identity's exact keys and SCAN globs for the keys
	// whose names carry more than the identity (window indexes, routes).
	idKeys func(s *Schema, id string) (exact, globs []string)
	// glob matches every key of the schema (a superset; parse decides).
	glob string
	// ttl is the TTL the library sets for a key, and maxTTL the longest it
	// can legitimately have; 0 when unknown (the limit was not given).
	ttl, maxTTL func(s *Schema, k Parsed) time.Duration
	// interpret reads a key's state in the schema's terms.
	interpret func(s *Schema, k *Key, now time.Time)
	// types lets several layouts share one schema (Spring's hash and
	// string variants); empty means Type.
	types []string
	// hasID says whether a parsed key belongs to an identity; nil means
	// the IDs are equal.
	hasID func(p Parsed, id string) bool
	// values is the fit spec (see fitSpec) of a key of the layout, when
	// not the type's default (string int, hash any, zset any, list num);
	// "" means the default.
	values func(p Parsed, typ string) string
	// fits says, once its value is read, whether a key whose name and type
	// this schema matched is really of its layout; nil means always. Names
	// alone cannot always tell layouts apart (see longestOfAny).
	fits func(k *Key) bool
}

// HasID reports whether the parsed key belongs to identity id.
func (s *Schema) HasID(p Parsed, id string) bool {
	if s.hasID != nil {
		return s.hasID(p, id)
	}
	return p.ID == id
}

// Params returns the parameters the schema was built with.
func (s *Schema) Params() Params { return s.params }

// Glob is a SCAN MATCH pattern that covers every key of the schema.
func (s *Schema) Glob() string { return s.glob }

// Parse reads a key name (and its type, "" when unknown) against the
// schema.
func (s *Schema) Parse(key, typ string) (Parsed, bool) {
	if typ != "" && !s.hasType(typ) {
		return Parsed{}, false
	}
	p, ok := s.parse(s, key, typ)
	if ok {
		p.Key = key
	}
	return p, ok
}

func (s *Schema) hasType(typ string) bool {
	if len(s.types) == 0 {
		return typ == s.Type
	}
	for _, t := range s.types {
		if t == typ {
			return true
		}
	}
	return false
}

// TTL is the expiry the limiter sets on k, or 0 when it cannot be known
// without the published limit.
func (s *Schema) TTL(k Parsed) time.Duration {
	if s.ttl == nil {
		return 0
	}
	return s.ttl(s, k)
}

// MaxTTL is the longest TTL k can legitimately have, or 0 when unknown.
func (s *Schema) MaxTTL(k Parsed) time.Duration {
	if s.maxTTL == nil {
		return s.TTL(k)
	}
	return s.maxTTL(s, k)
}

// IdentityKeys lists the exact keys an identity may have under this
// schema, and the SCAN globs that find the rest.
func (s *Schema) IdentityKeys(id string) (exact, globs []string) {
	return s.idKeys(s, id)
}

// Registry is the set of schemas a command works with.
type Registry struct {
	schemas []*Schema
}

// NewRegistry builds the built-in schemas with p, followed by extra
// (user-defined) ones.
func NewRegistry(p Params, extra ...*Schema) *Registry {
	r := &Registry{schemas: builtin(p)}
	r.schemas = append(r.schemas, extra...)
	return r
}

// All returns every schema, rlctl's own first.
func (r *Registry) All() []*Schema { return r.schemas }

// Names lists the schema names, sorted.
func (r *Registry) Names() []string {
	n := make([]string, 0, len(r.schemas))
	for _, s := range r.schemas {
		n = append(n, s.Name)
	}
	sort.Strings(n)
	return n
}

// Lookup returns the schema called name. The error lists the known names.
func (r *Registry) Lookup(name string) (*Schema, error) {
	for _, s := range r.schemas {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("unknown schema %q (known: %s)", name, strings.Join(r.Names(), ", "))
}

// Select narrows the registry to the named schema, or returns it whole
// when name is empty.
func (r *Registry) Select(name string) ([]*Schema, error) {
	if name == "" {
		return r.schemas, nil
	}
	s, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	return []*Schema{s}, nil
}

// Match finds the first schema among schemas that claims key (of type
// typ, "" when unknown). rlctl's own layouts come first, so a key like
// rl:fw:{a} is never mistaken for rate-limit-redis's rl:<id>.
func Match(schemas []*Schema, key, typ string) (*Schema, Parsed, bool) {
	for _, s := range schemas {
		if p, ok := s.Parse(key, typ); ok {
			return s, p, true
		}
	}
	return nil, Parsed{}, false
}

// longestOfAny is the longest of ttl over every schema that reads key (of
// type typ), or 0 when one of them cannot say. Where a name and type fit
// two layouts (an Upstash token bucket of identity "user:42" and a
// multi-region window of "user" in window 42) only the value tells them
// apart, and neither audit nor repair-ttl reads it: a TTL is too long only
// when it is too long for each layout, and a repaired key gets the longest
// TTL either would set (a bucket that expires early would refill at once;
// a window key that lives longer only holds memory).
func longestOfAny(schemas []*Schema, key, typ string, ttl func(*Schema, Parsed) time.Duration) time.Duration {
	var out time.Duration
	for _, s := range schemas {
		if p, ok := s.Parse(key, typ); ok {
			d := ttl(s, p)
			if d <= 0 {
				return 0
			}
			out = max(out, d)
		}
	}
	return out
}

// rematch moves k to another schema when its value shows that the one its
// name and type matched first does not fit (see Schema.fits). It keeps the
// first match when no other schema fits either.
func rematch(schemas []*Schema, k *Key) {
	if k.schema == nil || k.schema.fits == nil || k.schema.fits(k) {
		return
	}
	for _, s := range schemas {
		if p, ok := s.Parse(k.Key, k.Type); ok && s != k.schema && (s.fits == nil || s.fits(k)) {
			p.Key = k.Key
			k.schema, k.parsed = s, p
			k.Schema, k.ID, k.Part = s.Name, p.ID, p.Part
			return
		}
	}
}

// EscapeGlob quotes the characters SCAN MATCH treats specially, so an
// identity or a key prefix is matched literally.
func EscapeGlob(s string) string {
	// Byte by byte: keys are binary strings, not necessarily UTF-8.
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// globMatch reports whether name matches a Redis glob pattern (the subset
// SCAN uses: * ? [...] and \ escapes).
func globMatch(pattern, name string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 0 && pattern[0] == '*' {
				pattern = pattern[1:]
			}
			if pattern == "" {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if globMatch(pattern, name[i:]) {
					return true
				}
			}
			return false
		case '?':
			if name == "" {
				return false
			}
			pattern, name = pattern[1:], name[1:]
		case '[':
			if name == "" {
				return false
			}
			end := strings.IndexByte(pattern[1:], ']')
			if end < 0 {
				return false
			}
			class := pattern[1 : end+1]
			neg := strings.HasPrefix(class, "^")
			if neg {
				class = class[1:]
			}
			hit := false
			for i := 0; i < len(class); i++ {
				if i+2 < len(class) && class[i+1] == '-' {
					if class[i] <= name[0] && name[0] <= class[i+2] {
						hit = true
					}
					i += 2
					continue
				}
				if class[i] == name[0] {
					hit = true
				}
			}
			if hit == neg {
				return false
			}
			pattern, name = pattern[end+2:], name[1:]
		case '\\':
			if len(pattern) > 1 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if name == "" || pattern[0] != name[0] {
				return false
			}
			pattern, name = pattern[1:], name[1:]
		}
	}
	return name == ""
}
