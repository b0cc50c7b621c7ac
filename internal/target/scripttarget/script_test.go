package scripttarget

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/hotpath"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/traffic"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
	"github.com/rlctl/rlctl/internal/workload"
)

// fixedWindowLua is a user's fixed-window limiter: count, set the TTL when
// the window opens, refuse above the limit.
const fixedWindowLua = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return 0 end
return 1`

// tableLua answers {allowed, remaining} and logs the gateway and request id
// it was given, to check the templates.
const tableLua = `
redis.call('RPUSH', 'seen', ARGV[3] .. '|' .. ARGV[4] .. '|' .. ARGV[5])
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return {0, 0} end
return {1, tonumber(ARGV[1]) - n}`

func scriptClients(s *redistest.Server) func() redis.UniversalClient {
	return func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: s.Addr}) }
}

func TestRedisScriptFixedWindow(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lim := rate.Limit{Count: 10, Window: time.Hour}
	tgt, err := New(context.Background(), Options{
		Source: fixedWindowLua, Gateways: 4, NewClient: scriptClients(srv),
		Keys: []string{"rl:{id}"}, Args: []string{"{limit}", "{window_ms}"}, Allowed: "== 1", Limit: lim,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	// Drop the script cache mid-run: EVALSHA gets NOSCRIPT and the target
	// must fall back to EVAL rather than report errors.
	flush := traffic.Hook{At: 100 * time.Millisecond, Name: "script flush", Fn: func(ctx context.Context) {
		srv.Client(t).ScriptFlush(ctx)
	}}
	plan := traffic.Plan{Rate: perSecond(300), Duration: 300 * time.Millisecond, MaxRequests: 10000, Identities: 3}
	h, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{Hooks: []traffic.Hook{flush}})
	if err != nil {
		t.Fatal(err)
	}
	c := traffictest.Counts(h)
	if h.Len() != 90 || c[decision.Allowed] != 30 || c[decision.Denied] != 60 {
		t.Fatalf("%d records, outcomes %v; want 90: 30 allowed (10 per identity), 60 denied", h.Len(), c)
	}
	ttl := srv.Client(t).PTTL(context.Background(), "rl:user-2").Val()
	if ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("PTTL rl:user-2 = %v; the {window_ms} arg should have set about 1h", ttl)
	}
	for i := range h.Len() {
		if r := h.At(i); r.By != decision.ByRedis {
			t.Fatalf("record %d decided by %v", i, r.By)
		}
	}
}

func TestRedisScriptRaceIsAtomic(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lim := rate.Limit{Count: 4, Window: time.Hour}
	tgt, err := New(context.Background(), Options{
		Source: fixedWindowLua, Gateways: 6, NewClient: scriptClients(srv),
		Keys: []string{"rl:{id}"}, Args: []string{"{limit}", "{window_ms}"}, Allowed: "== 1", Limit: lim,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	plan := traffic.Plan{Pattern: workload.PatternRace, Limit: lim, Rounds: 8, Identities: 2, Duration: 20 * time.Second, MaxRequests: 100000}
	h, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range traffictest.RaceShape(t, h, 2, 6, 4) {
		if a != 1 {
			t.Fatalf("round %v: %d allowed; one Lua script is atomic, so exactly 1", k, a)
		}
	}
}

func TestRedisScriptTableReplyAndTemplates(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tgt, err := New(context.Background(), Options{
		Source: tableLua, Gateways: 2, NewClient: scriptClients(srv),
		Keys:    []string{"tb:{id}:{now_s}"},
		Args:    []string{"{limit}", "{window_s}", "gw{gateway}", "{request_id}", "{id}@{now_ms}"},
		Allowed: "[1] == 1", Limit: rate.Limit{Count: 2, Window: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	ctx := context.Background()
	var got []decision.Outcome
	for i := range 3 {
		got = append(got, tgt.Do(ctx, traffic.Request{ID: "u", Gateway: i % 2}).Outcome)
	}
	// The key carries {now_s}, so a second boundary between the calls would
	// open a new key; allow that by checking the count per key.
	seen := srv.Client(t).LRange(ctx, "seen", 0, -1).Val()
	if len(seen) != 3 {
		t.Fatalf("script saw %v", seen)
	}
	ids := map[string]bool{}
	for i, s := range seen {
		parts := strings.Split(s, "|")
		if len(parts) != 3 || parts[0] != []string{"gw0", "gw1", "gw0"}[i] || !strings.HasPrefix(parts[2], "u@") {
			t.Fatalf("call %d saw args %q", i, s)
		}
		ids[parts[1]] = true
	}
	if len(ids) != 3 {
		t.Fatalf("request ids %v not unique", ids)
	}
	keys := srv.Client(t).Keys(ctx, "tb:u:*").Val()
	if len(keys) == 1 && (got[0] != decision.Allowed || got[1] != decision.Allowed || got[2] != decision.Denied) {
		t.Fatalf("outcomes %v; want allowed, allowed, denied", got)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	good := Options{Source: fixedWindowLua, Gateways: 1, NewClient: scriptClients(srv),
		Keys: []string{"rl:{id}"}, Args: []string{"{limit}"}, Allowed: "== 1"}
	tests := []struct {
		name   string
		change func(*Options)
		code   exitcode.Code
	}{
		{"bad rule", func(o *Options) { o.Allowed = "is one" }, exitcode.Usage},
		{"empty rule", func(o *Options) { o.Allowed = "" }, exitcode.Usage},
		{"unknown placeholder", func(o *Options) { o.Keys = []string{"rl:{user}"} }, exitcode.Usage},
		{"unclosed placeholder", func(o *Options) { o.Args = []string{"{limit"} }, exitcode.Usage},
		{"lua syntax error", func(o *Options) { o.Source = "return (" }, exitcode.Usage},
		{"no gateways", func(o *Options) { o.Gateways = 0 }, exitcode.Usage},
		{"unreachable", func(o *Options) {
			o.NewClient = func() redis.UniversalClient {
				return redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
			}
		}, exitcode.Unreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.change(&o)
			_, err := New(context.Background(), o)
			if err == nil || exitcode.Of(err) != tt.code {
				t.Fatalf("err = %v (code %v); want code %v", err, exitcode.Of(err), tt.code)
			}
		})
	}
}

func TestRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule  string
		reply any
		want  bool
		fails bool
	}{
		{"== 1", int64(1), true, false},
		{"== 1", int64(0), false, false},
		{"== 1", "1", true, false},
		{"> 0", int64(3), true, false},
		{"> 0", int64(0), false, false},
		{">= 0.5", "0.5", true, false},
		{"< 0", int64(-1), true, false},
		{"<= 2", int64(3), false, false},
		{"!= 0", int64(5), true, false},
		{"== 1", nil, false, false},
		{"!= 1", nil, true, false},
		{"[1] == 1", []any{int64(1), int64(9)}, true, false},
		{"[2] > 0", []any{int64(1), int64(0)}, false, false},
		{"[3] == 1", []any{int64(1)}, false, true},
		{"[1] == 1", int64(1), false, true},
		{"== 1", []any{int64(1), int64(9)}, true, false},
		{"== 1", []any{int64(0), int64(9)}, false, false},
		{"!= nil", []any{}, false, false},
		{"== 1", true, true, false},
		{"== 1", false, false, false},
		{"== nil", false, true, false},
		{"== 'OK'", "OK", true, false},
		{`== "OK"`, "NO", false, false},
		{"!= 'x'", int64(3), true, false},
		{"== nil", nil, true, false},
		{"!= nil", int64(0), true, false},
		{"== 1", "yes", false, true},
		// A value the rule cannot read is an error whatever the rule: a
		// nested table, an error inside a table, a map.
		{"!= nil", []any{[]any{int64(1)}}, false, true},
		{"== 1", []any{[]any{int64(1)}}, false, true},
		{"[2] != nil", []any{int64(0), []any{}}, false, true},
		{"[1] != 'x'", []any{[]any{"x"}}, false, true},
		{"!= nil", []any{hotpath.Error("ERR boom")}, false, true},
		{"!= nil", map[any]any{"allowed": int64(1)}, false, true},
		{"[1] == 1", []any{int64(1), []any{int64(2)}}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			r, err := ParseRule(tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Match(tt.reply)
			if (err != nil) != tt.fails || got != tt.want {
				t.Fatalf("%q.Match(%#v) = %v, %v; want %v (error %v)", tt.rule, tt.reply, got, err, tt.want, tt.fails)
			}
		})
	}
	for _, bad := range []string{"", "1", "= 1", "== ", "== one", "[0] == 1", "[x] == 1", "[1 == 1", "> 'a'", "< nil", "== NaN", "== 'a"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"== 1", "[2] >= 0.5", "== 'OK'", "!= nil", "[", "<"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		// A parsed rule never panics on any reply shape.
		for _, reply := range []any{nil, int64(1), "1", "x", []any{int64(1)}, []any{}, []any{[]any{}}, map[any]any{}} {
			r.Match(reply)
		}
	})
}

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"rl:{id}", "{now_ms}-{request_id}", "{", "}", "{}", "a{id}b{limit}c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := parseTemplate(s)
		if err != nil {
			return
		}
		v := vars{id: "ID", now: time.Unix(1, 0), limit: rate.Limit{Count: 3, Window: time.Second}, gateway: 2, requestID: 9}
		out := tp.expand(&v)
		if !strings.ContainsAny(s, "{}") && out != s {
			t.Fatalf("literal %q expanded to %q", s, out)
		}
		if !strings.Contains(s, "{{") && !strings.Contains(s, "}}") && strings.ContainsAny(out, "{}") {
			// Without doubled braces every brace belongs to a known
			// placeholder, so none survives expansion.
			t.Fatalf("%q expanded to %q with a brace left", s, out)
		}
		// Any text with its braces doubled is read back as itself.
		esc := strings.NewReplacer("{", "{{", "}", "}}").Replace(s)
		lit, err := parseTemplate(esc)
		if err != nil || lit.expand(&v) != s {
			t.Fatalf("%q escaped as %q: %v, expands to %q", s, esc, err, lit.expand(&v))
		}
	})
}

func TestTemplateHashTags(t *testing.T) {
	t.Parallel()
	v := vars{id: "user-1", limit: rate.Limit{Count: 3, Window: time.Second}}
	for in, want := range map[string]string{
		"rl:{{{id}}}:tokens": "rl:{user-1}:tokens",
		"{{literal}}":        "{literal}",
		"rl:{id}":            "rl:user-1",
		"{{{limit}}}{{":      "{3}{",
	} {
		tp, err := parseTemplate(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := tp.expand(&v); got != want {
			t.Errorf("%q expanded to %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{"{", "}", "a}b", "{id", "{nope}", "{{id}"} {
		if _, err := parseTemplate(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// retryLua answers {allowed, retry_after_ms}: the window's PTTL when
// denied, -1 when allowed.
const retryLua = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return {0, redis.call('PTTL', KEYS[1])} end
return {1, -1}`

func TestRedisScriptRetryAfter(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lim := rate.Limit{Count: 2, Window: time.Hour}
	tgt, err := New(context.Background(), Options{
		Source: retryLua, Gateways: 2, NewClient: scriptClients(srv),
		Keys: []string{"rl:{id}"}, Args: []string{"{limit}", "{window_ms}"}, Allowed: "[1] == 1",
		RetryAfter: "[2] ms", Limit: lim,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	plan := traffic.Plan{Rate: perSecond(100), Duration: 100 * time.Millisecond, MaxRequests: 1000, Identities: 1}
	h, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	denied := 0
	for i := range h.Len() {
		r := h.At(i)
		switch r.Outcome {
		case decision.Denied:
			denied++
			if r.RetryAfter < 59*time.Minute || r.RetryAfter > time.Hour {
				t.Fatalf("denied record %d: RetryAfter %v, want the window's PTTL (about 1h)", i, r.RetryAfter)
			}
		case decision.Allowed:
			if r.RetryAfter != history.NoTime {
				t.Fatalf("allowed record %d has RetryAfter %v", i, r.RetryAfter)
			}
		default:
			t.Fatalf("record %d: %v", i, r.Outcome)
		}
	}
	if denied == 0 {
		t.Fatal("nothing was denied: the test checks nothing")
	}
}

func TestRetryRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule  string
		reply any
		want  time.Duration
		fails bool
	}{
		{"ms", int64(1500), 1500 * time.Millisecond, false},
		{"s", "2.5", 2500 * time.Millisecond, false},
		{"[2] ms", []any{int64(0), int64(30)}, 30 * time.Millisecond, false},
		{"[2] s", []any{int64(0), int64(-1)}, -1, false},
		{"[2] s", []any{int64(0), nil}, -1, false},
		{"[3] ms", []any{int64(0)}, -1, true},
		{"ms", "soon", -1, true},
		{"[1] ms", int64(3), -1, true},
	}
	for _, tt := range tests {
		r, err := ParseRetryRule(tt.rule)
		if err != nil {
			t.Fatalf("ParseRetryRule(%q): %v", tt.rule, err)
		}
		got, err := r.Read(tt.reply)
		if (err != nil) != tt.fails || got != tt.want {
			t.Errorf("%q.Read(%#v) = %v, %v; want %v (error %v)", tt.rule, tt.reply, got, err, tt.want, tt.fails)
		}
	}
	if r, err := ParseRetryRule(""); err != nil || r.Unit != 0 {
		t.Errorf("empty rule: %+v, %v; want none", r, err)
	}
	for _, bad := range []string{"[2]", "[0] ms", "[x] s", "[2 ms", "minutes", "2 ms"} {
		if _, err := ParseRetryRule(bad); err == nil {
			t.Errorf("ParseRetryRule(%q) accepted", bad)
		}
	}
}

// twoKeyLua counts in KEYS[1] and notes the last count in KEYS[2]: on a
// Cluster both keys must share a hash tag, or Redis answers CROSSSLOT.
const twoKeyLua = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
redis.call('SET', KEYS[2], n, 'PX', ARGV[2])
if n > tonumber(ARGV[1]) then return 0 end
return 1`

// On a Cluster the script goes through go-redis (its slot routing); on a
// single server through the same hotpath pool as the built-in designs. Both
// decide alike, and a hash tag written with doubled braces keeps a
// two-key script in one slot.
func TestRedisScriptClusterAndSingleServerAgree(t *testing.T) {
	t.Parallel()
	lim := rate.Limit{Count: 5, Window: time.Hour}
	cl := redistest.StartCluster(t)
	single := redistest.Start(t)
	for name, newClient := range map[string]func() redis.UniversalClient{
		"cluster": func() redis.UniversalClient { return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs}) },
		"single":  scriptClients(single),
	} {
		tgt, err := New(context.Background(), Options{
			Source: twoKeyLua, Gateways: 3, NewClient: newClient,
			Keys: []string{"rl:{{{id}}}:n", "rl:{{{id}}}:last"}, Args: []string{"{limit}", "{window_ms}"}, Allowed: "== 1", Limit: lim,
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer tgt.Close()
		st := tgt.(*scriptTarget)
		if usesPool := st.pools[0] != nil; usesPool != (name == "single") {
			t.Errorf("%s: hotpath pool in use %v", name, usesPool)
		}
		plan := traffic.Plan{Rate: perSecond(200), Duration: 200 * time.Millisecond, MaxRequests: 1000, Identities: 4}
		h, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := traffictest.Counts(h); h.Len() != 40 || c[decision.Allowed] != 20 || c[decision.Denied] != 20 {
			t.Errorf("%s: %d records, outcomes %v; want 40: 20 allowed (5 per identity), 20 denied", name, h.Len(), c)
		}
	}
}

func TestNamespaceTemplate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, out, fixed string
		exact          bool
	}{
		{"rl:{id}", "rl:rlctl-x:{id}", "rl:rlctl-x:", false},
		{"rl:{{{id}}}:tokens", "rl:{{rlctl-x:{id}}}:tokens", "rl:{rlctl-x:", false},
		{"{id}", "rlctl-x:{id}", "rlctl-x:", false},
		{"rl:global", "rl:global:rlctl-x", "rl:global:rlctl-x", true},
		{"rl:{{tag}}:n", "rl:{{tag}}:n:rlctl-x", "rl:{tag}:n:rlctl-x", true},
	} {
		out, fixed, exact, err := NamespaceTemplate(tt.in, "rlctl-x:")
		if err != nil || out != tt.out || fixed != tt.fixed || exact != tt.exact {
			t.Errorf("%q: got %q %q %v %v, want %q %q %v", tt.in, out, fixed, exact, err, tt.out, tt.fixed, tt.exact)
		}
		if err := CheckTemplate(out); err != nil {
			t.Errorf("%q: the namespaced template %q does not parse: %v", tt.in, out, err)
		}
	}
	if _, _, _, err := NamespaceTemplate("rl:{nope}", "x:"); err == nil {
		t.Error("a bad template: want an error")
	}
}

func perSecond(n int64) rate.Limit { return rate.Limit{Count: n, Window: time.Second} }

// A script whose reply the allowed rule cannot read, on a real
// redis-server, is an error outcome naming the shape, never an admission:
// a nested table where the rule reads a value, with "!= nil" (which any
// non-nil value would otherwise satisfy) and with "== 1"; an error reply
// inside the table. A nested table the rule does not read is fine.
func TestRedisScriptUnreadableReplyIsAnError(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tests := []struct {
		name, script, rule string
		want               decision.Outcome
		msg                string
	}{
		{"nested first element, != nil", `return {{1}}`, "!= nil", decision.Error, "nested table"},
		{"nested first element, == 1", `return {{1}, 1}`, "== 1", decision.Error, "nested table"},
		{"nested indexed element", `return {0, {1, 2}}`, "[2] != nil", decision.Error, "cannot read element 2 of the reply: it is a nested table (2 elements)"},
		{"error inside the table", `return {redis.error_reply('boom')}`, "!= nil", decision.Error, "error reply"},
		{"nested but unread", `return {1, {2}}`, "[1] == 1", decision.Allowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, err := New(context.Background(), Options{
				Source: tt.script, Gateways: 1, NewClient: scriptClients(srv),
				Keys: []string{"n:{id}"}, Allowed: tt.rule, Limit: rate.Limit{Count: 1, Window: time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer tgt.Close()
			res := tgt.Do(context.Background(), traffic.Request{ID: "u"})
			if res.Outcome != tt.want {
				t.Fatalf("outcome %v (err %v), want %v", res.Outcome, res.Err, tt.want)
			}
			if tt.msg != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), tt.msg)) {
				t.Fatalf("error %v, want it to say %q", res.Err, tt.msg)
			}
		})
	}
}
