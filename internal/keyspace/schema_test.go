package keyspace

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

func TestMatchSchemas(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(Params{})
	tests := []struct {
		key, typ, schema, id, part string
	}{
		{"rl:fw:{alice}", "string", "redis-fixed-window", "alice", ""},
		{"rl:fw:{a:b}}", "string", "redis-fixed-window", "a:b}", ""},
		{"rl:cw:{alice}:29123", "string", "redis-clock-window", "alice", ""},
		{"rl:tb:{alice}", "hash", "redis-token-bucket", "alice", ""},
		{"rl:sl:{alice}", "zset", "redis-sliding-log", "alice", ""},
		{"rl:lease:{a}:7", "string", "leasing", "a", ""},
		{"rl:alice", "string", SchemaRateLimitRedis, "alice", ""},
		{"rl:fw:alice", "string", SchemaRateLimitRedis, "fw:alice", ""},
		{"rate:alice", "string", SchemaRedisRate, "alice", ""},
		{"api_user_alice_1795990620", "string", SchemaEnvoy, "user_alice", "api"},
		{"request_rate_limiter.{alice}.tokens", "string", SchemaSpring, "alice", "tokens"},
		{"request_rate_limiter.{alice}", "hash", SchemaSpring, "alice", "bucket"},
		{"ratelimit:00000000-0000-0000-0000-000000000000:s1:2001:db8::1:1795990620000:minute", "string", SchemaKong, "2001:db8::1", "minute"},
		{"limiter:1.2.3.4", "string", SchemaUlule, "1.2.3.4", ""},
		{"rlflx:login:alice@example.com", "string", SchemaFlexible, "login:alice@example.com", ""},
		{"LIMITS:LIMITER/127.0.0.1/api.index/100/1/minute", "string", SchemaPythonLimits, "127.0.0.1", "api.index"},
		{"LIMITS:LIMITER/2001:db8::7/10/2/hour", "string", SchemaPythonLimits, "2001:db8::7", ""},
		{"LIMITS:{LIMITER/10.0.0.1/5/30/second}", "string", SchemaPythonLimits, "10.0.0.1", "current"},
		{"LIMITS:{LIMITER/10.0.0.1/login/5/30/second}/-1", "string", SchemaPythonLimits, "10.0.0.1", "login previous"},
		{"LIMITER/10.0.0.2/api/100/1/day", "string", SchemaPythonLimits, "10.0.0.2", "api"}, // limits < 3
		{"LIMITS:LIMITER/10.0.0.1/5/1/fortnight", "string", "", "", ""},
		{"OTHER:LIMITER/10.0.0.1/5/1/minute", "string", "", "", ""},
		{"LIMITS:LIMITER/10.0.0.1/5/1/minute", "list", SchemaPythonLimits, "10.0.0.1", ""}, // moving window
		{"LIMITS:LIMITER/10.0.0.1/5/1/minute", "hash", "", "", ""},
		{"@upstash/ratelimit:user:42:2993317", "string", SchemaUpstashWindow, "user:42", ""},
		{"@upstash/ratelimit:user:42:2993317", "hash", SchemaUpstashWindow, "user:42", ""}, // multi-region
		{"@upstash/ratelimit:mia", "hash", SchemaUpstashBucket, "mia", ""},
		// "@upstash/ratelimit:user:42" as a hash is a multi-region window of
		// "user" by its name, or a token bucket of "user:42": only its
		// fields tell (see the inspect fixtures).
		// Not limiter keys.
		{"session:alice", "string", "", "", ""},
		{"rl:fw:{alice}", "hash", "", "", ""},
		{"api_user_alice_notanumber", "string", "", "", ""},
		{"ratelimit:a:b:c:123:fortnight", "string", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.key+"/"+tt.typ, func(t *testing.T) {
			s, p, ok := Match(reg.All(), tt.key, tt.typ)
			if tt.schema == "" {
				if ok {
					t.Fatalf("claimed by %s as %+v", s.Name, p)
				}
				return
			}
			if !ok || s.Name != tt.schema || p.ID != tt.id || p.Part != tt.part {
				name := ""
				if s != nil {
					name = s.Name
				}
				t.Fatalf("got %q %+v, want %s id %q part %q", name, p, tt.schema, tt.id, tt.part)
			}
			// Every claimed key is inside its schema's SCAN glob.
			if !globMatch(s.Glob(), tt.key) {
				t.Errorf("glob %q does not cover %q", s.Glob(), tt.key)
			}
		})
	}
}

func TestIdentityKeysCoverTheirKeys(t *testing.T) {
	t.Parallel()
	// For every schema, the keys of an identity (exact or by glob) are
	// found from the identity alone, and never another identity's.
	reg := NewRegistry(Params{})
	keys := map[string]string{
		"rl:cw:{a*b}:5":                         "a*b",
		"rl:fw:{a*b}":                           "a*b",
		"api_user_a*b_1795990620":               "a*b",
		"ratelimit:r:s:a*b:1795990620000:hour":  "a*b",
		"@upstash/ratelimit:a*b:99":             "a*b",
		"request_rate_limiter.{a*b}.timestamp":  "a*b",
		"rl:cw:{a*bc}:5":                        "a*bc",
		"ratelimit:r:s:xa*b:1795990620000:hour": "xa*b",
	}
	for key, owner := range keys {
		s, p, ok := Match(reg.All(), key, "")
		if !ok {
			t.Fatalf("%s unclaimed", key)
		}
		exact, globs := s.IdentityKeys("a*b")
		found := false
		for _, e := range exact {
			found = found || e == key
		}
		for _, g := range globs {
			found = found || globMatch(g, key)
		}
		if found && !s.HasID(p, "a*b") {
			continue // found by glob but filtered out by identity: fine
		}
		if found != (owner == "a*b") {
			t.Errorf("%s (owner %q): found for a*b = %v", key, owner, found)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"rl:*", "rl:x", true},
		{"rl:*", "r", false},
		{"a?c", "abc", true},
		{"a[0-9]c", "a5c", true},
		{"a[0-9]c", "abc", false},
		{"a[^0-9]c", "abc", true},
		{`a\*c`, "a*c", true},
		{`a\*c`, "abc", false},
		{"*_[0-9]*", "x_1", true},
		{"*_[0-9]*", "x_a", false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v", tt.pattern, tt.name, got)
		}
	}
}

// FuzzEscapeGlob: an escaped name matches itself, and only itself among
// its one-byte variants.
func FuzzEscapeGlob(f *testing.F) {
	for _, s := range []string{"alice", "a*b", "[x]", `\`, "?", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g := EscapeGlob(s)
		if !globMatch(g, s) {
			t.Fatalf("escaped %q does not match itself (%q)", s, g)
		}
		if globMatch(g, s+"x") {
			t.Fatalf("escaped %q matches a longer name", s)
		}
	})
}

// FuzzGlobAgainstRegexp compares globMatch with a regular expression built
// from the same pattern (brute force for the subset without classes).
func FuzzGlobAgainstRegexp(f *testing.F) {
	f.Add("a*b?c", "axxbyc")
	f.Add("**", "")
	f.Add(`\*x`, "*x")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if strings.ContainsAny(pattern, "[]") {
			return
		}
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(pattern); i++ {
			switch c := pattern[i]; c {
			case '*':
				re.WriteString("(?s:.*)")
			case '?':
				re.WriteString("(?s:.)")
			case '\\':
				if i+1 < len(pattern) {
					i++
				}
				re.WriteString(regexp.QuoteMeta(string(pattern[i])))
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("$")
		rx, err := regexp.Compile(re.String())
		if err != nil {
			return
		}
		// Compare on bytes: Redis globs work byte by byte.
		if !utf8Safe(pattern) || !utf8Safe(name) {
			return
		}
		if got, want := globMatch(pattern, name), rx.MatchString(name); got != want {
			t.Fatalf("globMatch(%q, %q) = %v, regexp says %v", pattern, name, got, want)
		}
	})
}

func utf8Safe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func TestSlotMatchesRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	c := srv.Client(t)
	ctx := context.Background()
	for _, k := range []string{"", "a", "rl:fw:{alice}", "{}x", "x{}{y}", "{user1000}.following", "@upstash/ratelimit:x:1000", "foo{bar"} {
		want, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := Slot(k); int64(got) != want {
			t.Errorf("Slot(%q) = %d, Redis says %d", k, got, want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add("schemas:\n  - name: a\n    pattern: 'x:{id}'\n    window: 1m\n    limit: 5\n")
	f.Add("schemas: [{pattern: '{id}'}]")
	f.Add("")
	f.Fuzz(func(t *testing.T, data string) {
		schemas, err := ParseConfig("f.yaml", []byte(data))
		if err != nil {
			return
		}
		for _, s := range schemas {
			if strings.Trim(s.Glob(), "*?") == "" {
				t.Fatalf("schema %s accepted a pattern matching everything: %q", s.Name, s.Glob())
			}
		}
	})
}

func TestCustomSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    CustomSpec
		key     string
		wantID  string
		wantErr string
	}{
		{"counter", CustomSpec{Pattern: "myrl:{id}", Window: time.Minute, Limit: 100}, "myrl:alice", "alice", ""},
		{"windowed", CustomSpec{Pattern: "q:{id}:{window}", Window: time.Minute}, "q:a:b:123", "a:b", ""},
		{"literal braces", CustomSpec{Pattern: "x{y}:{id}", Window: time.Minute}, "x{y}:bob", "bob", ""},
		{"no id", CustomSpec{Pattern: "myrl:"}, "", "", "must contain {id}"},
		{"two ids", CustomSpec{Pattern: "{id}:{id}"}, "", "", "must contain {id}"},
		{"everything", CustomSpec{Pattern: "{id}"}, "", "", "matches every key"},
		{"bad type", CustomSpec{Pattern: "x:{id}", Type: "list"}, "", "", "type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := CustomSchema(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, ok := s.Parse(tt.key, "")
			if !ok || p.ID != tt.wantID {
				t.Fatalf("parse %q: %+v %v", tt.key, p, ok)
			}
			if !globMatch(s.Glob(), tt.key) {
				t.Errorf("glob %q misses %q", s.Glob(), tt.key)
			}
		})
	}
}

func TestParseConfigRejectsUnknownFields(t *testing.T) {
	t.Parallel()
	_, err := ParseConfig("rlctl.yaml", []byte("schemas:\n  - pattern: 'x:{id}'\n    windw: 1m\n"))
	if err == nil || !strings.Contains(err.Error(), "rlctl.yaml") || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("err %v", err)
	}
}

func TestCustomSchemaInspectAndRepair(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	s, err := CustomSchema(CustomSpec{Name: "myrl", Pattern: "myrl:{id}", Window: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "myrl:alice", 42, 0)
	reg := NewRegistry(Params{}, s)
	in, err := Inspect(ctx, c, reg.All(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Keys) != 1 || in.Keys[0].Schema != "myrl" || !strings.HasPrefix(in.Keys[0].Meaning, "42 of 100 used") {
		t.Fatalf("%+v", in.Keys)
	}
	st, err := RepairTTL(ctx, c, RepairOptions{Schemas: []*Schema{s}})
	if err != nil || st.Repaired != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	if ttl := c.PTTL(ctx, "myrl:alice").Val(); ttl < 55*time.Second || ttl > time.Minute {
		t.Errorf("ttl %v", ttl)
	}
}

func TestDeleteExactlyOneIdentity(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"standalone", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			var c redis.UniversalClient
			if mode == "cluster" {
				cl := redistest.StartCluster(t)
				c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
			} else {
				c = redistest.Start(t).Client(t)
			}
			defer c.Close()
			ctx := context.Background()
			victim := []string{"rl:fw:{alice}", "rl:tb:{alice}", "rl:cw:{alice}:100", "rl:cw:{alice}:101",
				"api_user_alice_1795990620", "@upstash/ratelimit:alice:77", "limiter:alice", "rate:alice"}
			others := []string{"rl:fw:{alice2}", "rl:fw:{bob}", "rl:cw:{bob}:100", "api_user_alicex_1795990620",
				"@upstash/ratelimit:malice:77", "alice", "session:alice"}
			for _, k := range append(append([]string{}, victim...), others...) {
				if strings.HasPrefix(k, "rl:tb:") {
					must(t, c.HSet(ctx, k, "tokens", 1, "ts", 1).Err())
					continue
				}
				must(t, c.Set(ctx, k, 1, time.Minute).Err())
			}
			before := snapshot(t, c)
			reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
			keys, err := IdentityKeys(ctx, c, reg.All(), "alice")
			if err != nil {
				t.Fatal(err)
			}
			// IdentityKeys is a superset by name; Inspect filters by
			// identity, which is what reset deletes.
			in, err := Inspect(ctx, c, reg.All(), "alice")
			if err != nil {
				t.Fatal(err)
			}
			var del []string
			for _, k := range in.Keys {
				del = append(del, k.Key)
			}
			if len(del) != len(victim) {
				t.Fatalf("to delete %v (from %v), want %v", del, keys, victim)
			}
			n, err := Delete(ctx, c, del)
			if err != nil || n != int64(len(victim)) {
				t.Fatalf("deleted %d, %v", n, err)
			}
			after := snapshot(t, c)
			for _, k := range victim {
				if _, ok := after[k]; ok {
					t.Errorf("%s survived", k)
				}
			}
			for _, k := range others {
				if after[k].dump != before[k].dump {
					t.Errorf("%s touched", k)
				}
			}
		})
	}
}

// FuzzMatch: whatever the key, matching never panics; a claimed key lies
// inside its schema's SCAN glob, and its identity's lookup finds it.
func FuzzMatch(f *testing.F) {
	for _, k := range []string{"rl:fw:{a}", "rl:cw:{a}:1", "api_k_v_1795990620", "request_rate_limiter.{x}.tokens",
		"ratelimit:r:s:id:1795990620000:minute", "@upstash/ratelimit:u:5", "rate:z", "limiter:q", "rl:x", "x"} {
		f.Add(k, "string")
		f.Add(k, "hash")
	}
	reg := NewRegistry(Params{Limit: rate.Limit{Count: 10, Window: time.Minute}})
	f.Fuzz(func(t *testing.T, key, typ string) {
		s, p, ok := Match(reg.All(), key, typ)
		if !ok {
			return
		}
		if !globMatch(s.Glob(), key) {
			t.Fatalf("%s claims %q outside its glob %q", s.Name, key, s.Glob())
		}
		if !s.HasID(p, p.ID) {
			t.Fatalf("%s: %q does not belong to its own id %q", s.Name, key, p.ID)
		}
		exact, globs := s.IdentityKeys(p.ID)
		found := false
		for _, e := range exact {
			found = found || e == key
		}
		for _, g := range globs {
			found = found || globMatch(g, key)
		}
		if !found {
			t.Fatalf("%s: identity %q does not find its key %q (exact %q, globs %q)", s.Name, p.ID, key, exact, globs)
		}
	})
}

// Every key rlctl's own designs write (limiter.Keys) reads back, through
// its design's schema, as the identity it was written for, also when the
// identity holds the layout's own separators, and with a non-default
// prefix; a key of another prefix is not the schema's. A failover's
// counts_lost is split by identity this way.
func TestOwnSchemasReadBackLimiterKeys(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_123_456)
	for _, l := range ownLayouts {
		for _, prefix := range []string{"", "app:rl:"} {
			s, err := NewRegistry(Params{Prefix: prefix}).Lookup(l.alg)
			if err != nil {
				t.Fatal(err)
			}
			cfg := limiter.Config{Algorithm: l.alg, Prefix: prefix, Limit: rate.Limit{Count: 5, Window: time.Second}}
			for _, id := range []string{"u1", "a:b", "x}y", "{z}", "203.0.113.7:443", "user:12:34"} {
				keys := limiter.Keys(cfg, id, now)
				if len(keys) == 0 {
					t.Fatalf("%s writes no key", l.alg)
				}
				for _, k := range keys {
					if p, ok := s.Parse(k, ""); !ok || p.ID != id {
						t.Errorf("%s, prefix %q: key %q reads as %q (%v), want %q", l.alg, prefix, k, p.ID, ok, id)
					}
				}
			}
			other := cfg
			other.Prefix = "other:"
			for _, k := range limiter.Keys(other, "u1", now) {
				if p, ok := s.Parse(k, ""); ok {
					t.Errorf("%s, prefix %q: another prefix's key %q reads as %q", l.alg, prefix, k, p.ID)
				}
			}
		}
	}
}
