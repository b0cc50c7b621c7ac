package scripttarget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/hotpath"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/traffic"
)

// Options configure a redis-script target: the user's own Lua limiter,
// run by Gateways simulated gateways (each with its own client) via EVALSHA.
type Options struct {
	Source   string
	Gateways int
	// NewClient returns a new client with its own pool; it is called once
	// per gateway, and the target closes what it returns.
	NewClient func() redis.UniversalClient
	// Keys and Args are templates: {id}, {now_ms}, {now_s}, {limit},
	// {window_s}, {window_ms}, {gateway} and {request_id} are replaced per
	// request.
	Keys, Args []string
	// Allowed is the rule saying which reply means allowed: "== 1", "> 0",
	// "[2] == 1" (an element of a table reply; without an index a table's
	// first element is compared), "== 'OK'", "!= nil".
	Allowed string
	// RetryAfter, when set, says where a denied reply carries how long to
	// wait: "[2] ms" (element 2 of a table, in milliseconds), "[3] s", or
	// "ms" / "s" for the reply itself. Empty: the script gives none.
	RetryAfter string
	Limit      rate.Limit
	// Timeout bounds one script call (zero: the client's own timeouts).
	Timeout time.Duration
	// Control, when set, returns a client outside any fault the run
	// injects, for stopping a script a timed-out call left running (see
	// Settler); nil uses NewClient.
	Control func() redis.UniversalClient
}

// Settler is what a redis-script target also is: Settle, once the traffic
// is over, waits until every script a timed-out call left running was
// looked into (stopped with SCRIPT KILL where Redis allows it) and says
// what was done, as notes for the report, with an error
// (exitcode.Unreachable) when one could not be stopped and the server is
// left answering BUSY.
type Settler interface {
	Settle() (notes []string, err error)
}

type scriptTarget struct {
	script  *redis.Script
	clients []redis.UniversalClient
	// pools run the script on a single server (not a Cluster), as the
	// built-in designs do (see package hotpath), so a user's limiter and
	// rlctl's own are measured through the same client; nil for a gateway
	// that goes through go-redis.
	pools     []*hotpath.Pool
	rscript   *hotpath.Script
	names     []string
	keys      []template
	args      []template
	rule      Rule
	retry     RetryRule
	limit     rate.Limit
	timeout   time.Duration
	requestID atomic.Uint64
	kill      *killer
}

// New loads the script into Redis (so a syntax error shows now,
// not as a run full of errors) and returns the target, a Settler. A malformed rule or
// template is a usage error; an unreachable Redis is exitcode.Unreachable.
func New(ctx context.Context, o Options) (traffic.Target, error) {
	if strings.TrimSpace(o.Source) == "" {
		return nil, exitcode.With(errors.New("redis-script target: empty script"), exitcode.Usage)
	}
	if o.Gateways <= 0 || o.Gateways > 1<<16-1 {
		return nil, exitcode.With(fmt.Errorf("redis-script target: %d gateways (want 1..65535)", o.Gateways), exitcode.Usage)
	}
	if o.NewClient == nil {
		return nil, errors.New("redis-script target: no client constructor")
	}
	rule, err := ParseRule(o.Allowed)
	if err != nil {
		return nil, exitcode.With(fmt.Errorf("redis-script target: %w", err), exitcode.Usage)
	}
	retry, err := ParseRetryRule(o.RetryAfter)
	if err != nil {
		return nil, exitcode.With(fmt.Errorf("redis-script target: %w", err), exitcode.Usage)
	}
	t := &scriptTarget{script: redis.NewScript(o.Source), rscript: hotpath.NewScript(o.Source), rule: rule, retry: retry, limit: o.Limit, timeout: o.Timeout}
	for _, group := range []struct {
		src []string
		dst *[]template
		of  string
	}{{o.Keys, &t.keys, "key"}, {o.Args, &t.args, "arg"}} {
		for _, s := range group.src {
			tp, err := parseTemplate(s)
			if err != nil {
				return nil, exitcode.With(fmt.Errorf("redis-script target: %s %q: %w", group.of, s, err), exitcode.Usage)
			}
			*group.dst = append(*group.dst, tp)
		}
	}
	for i := range o.Gateways {
		c := o.NewClient()
		t.clients = append(t.clients, c)
		t.names = append(t.names, fmt.Sprintf("script-%d", i))
		t.pools = append(t.pools, hotpath.ForClient(c))
	}
	if err := t.script.Load(ctx, t.clients[0]).Err(); err != nil {
		t.Close()
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return nil, exitcode.With(fmt.Errorf("redis-script target: load script: %w", err), exitcode.Usage)
		}
		return nil, exitcode.With(fmt.Errorf("redis-script target: load script: %w", err), exitcode.Unreachable)
	}
	control := o.Control
	if control == nil {
		control = o.NewClient
	}
	t.kill = &killer{control: control, timeout: o.Timeout, wait: busyWait(ctx, t.clients[0])}
	return t, nil
}

func (t *scriptTarget) Do(ctx context.Context, r traffic.Request) traffic.Response {
	now := time.Now()
	v := vars{id: r.ID, now: now, limit: t.limit, gateway: r.Gateway, requestID: t.requestID.Add(1)}
	keys := make([]string, len(t.keys))
	for i, k := range t.keys {
		keys[i] = k.expand(&v)
	}
	args := make([]string, len(t.args))
	for i, a := range t.args {
		args[i] = a.expand(&v)
	}
	reply, err := t.run(ctx, r.Gateway, keys, args)
	if err != nil {
		if timedOut(err) {
			t.kill.trigger()
		}
		return traffic.ErrResponse(fmt.Errorf("%s: run script: %w", t.names[r.Gateway], err))
	}
	ok, err := t.rule.Match(reply)
	if err != nil {
		return traffic.ErrResponse(fmt.Errorf("%s: %w", t.names[r.Gateway], err))
	}
	out := traffic.Response{Outcome: decision.Denied, By: decision.ByRedis, RetryAfter: -1, Remaining: -1, Reset: -1}
	if ok {
		out.Outcome = decision.Allowed
	} else if t.retry.Unit > 0 {
		d, err := t.retry.Read(reply)
		if err != nil {
			return traffic.ErrResponse(fmt.Errorf("%s: %w", t.names[r.Gateway], err))
		}
		out.RetryAfter = d
	}
	return out
}

// run runs the script through gateway g, within the target's timeout. A
// nil reply (Lua's false or nil) is nil, not an error.
func (t *scriptTarget) run(ctx context.Context, g int, keys, args []string) (any, error) {
	if p := t.pools[g]; p != nil {
		var deadline time.Time
		if t.timeout > 0 {
			deadline = time.Now().Add(t.timeout)
		}
		return p.Eval(ctx, deadline, t.rscript, keys, args)
	}
	if t.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	reply, err := t.script.Run(ctx, t.clients[g], keys, anyArgs...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return reply, err
}

// cutIndex reads the optional "[N]" (1-based, as in Lua) that starts a
// reply rule, returning 0 when there is none and the rest of the rule.
func cutIndex(in string) (int, string, error) {
	if !strings.HasPrefix(in, "[") {
		return 0, in, nil
	}
	end := strings.IndexByte(in, ']')
	if end < 0 {
		return 0, in, errors.New("unclosed '['")
	}
	n, err := strconv.Atoi(strings.TrimSpace(in[1:end]))
	if err != nil || n < 1 {
		return 0, in, errors.New("index must be a positive integer (1 is the first element)")
	}
	return n, strings.TrimSpace(in[end+1:]), nil
}

// element is reply's element index (1-based) when index > 0, else reply.
func element(reply any, index int) (any, error) {
	if index == 0 {
		return reply, nil
	}
	arr, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("wants element %d of a table, script returned %T", index, reply)
	}
	if index > len(arr) {
		return nil, fmt.Errorf("wants element %d, the table has %d", index, len(arr))
	}
	return arr[index-1], nil
}

// RetryRule says where a denied script reply carries its retry-after: an
// element (Index, 1-based; 0 for the reply itself) in Unit. A zero Unit
// means the script gives none.
type RetryRule struct {
	Index int
	Unit  time.Duration
}

// ParseRetryRule reads "[2] ms", "[3] s", "ms" or "s"; empty gives the
// zero rule.
func ParseRetryRule(s string) (RetryRule, error) {
	var r RetryRule
	in := strings.TrimSpace(s)
	if in == "" {
		return r, nil
	}
	var err error
	if r.Index, in, err = cutIndex(in); err != nil {
		return r, fmt.Errorf("retry_after %q: %w", s, err)
	}
	switch in {
	case "ms":
		r.Unit = time.Millisecond
	case "s":
		r.Unit = time.Second
	default:
		return r, fmt.Errorf("retry_after %q: want a unit, ms or s, after the optional [element]", s)
	}
	return r, nil
}

// Read returns the retry-after in reply; -1 (none) when the value is
// negative or nil, as scripts say "no idea".
func (r RetryRule) Read(reply any) (time.Duration, error) {
	reply, err := element(reply, r.Index)
	if err != nil {
		return -1, fmt.Errorf("retry_after: %w", err)
	}
	if reply, err = readable(reply); err != nil {
		return -1, fmt.Errorf("retry_after cannot read its value: %w", err)
	}
	var f float64
	switch v := reply.(type) {
	case nil:
		return -1, nil
	case int64:
		f = float64(v)
	case string:
		var err error
		if f, err = strconv.ParseFloat(v, 64); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return -1, fmt.Errorf("retry_after wants a number, script returned %q", v)
		}
	}
	if f < 0 {
		return -1, nil
	}
	return time.Duration(f * float64(r.Unit)), nil
}

// Warm opens conns connections on every gateway at once, in the pool its
// decisions use.
func (t *scriptTarget) Warm(ctx context.Context, conns int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(t.clients))
	for i, c := range t.clients {
		wg.Go(func() {
			if p := t.pools[i]; p != nil {
				errs[i] = p.Warm(ctx, conns)
			} else {
				errs[i] = redisconn.Warm(ctx, c, conns)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (t *scriptTarget) Gateways() []string  { return t.names }
func (t *scriptTarget) Endpoints() []string { return []string{"default"} }

func (t *scriptTarget) Settle() ([]string, error) { return t.kill.settled() }

func (t *scriptTarget) Close() error {
	var errs []error
	if t.kill != nil {
		errs = append(errs, t.kill.close())
	}
	for i, c := range t.clients {
		if p := t.pools[i]; p != nil {
			errs = append(errs, p.Close())
		}
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// vars are the values a template can use for one request.
type vars struct {
	id        string
	now       time.Time
	limit     rate.Limit
	gateway   int
	requestID uint64
}

type segment struct {
	lit string
	v   string // variable name, or "" for a literal
}

// template is a key or arg with {name} placeholders, parsed once.
type template []segment

var templateVars = map[string]func(*vars) string{
	"id":         func(v *vars) string { return v.id },
	"now_ms":     func(v *vars) string { return strconv.FormatInt(v.now.UnixMilli(), 10) },
	"now_s":      func(v *vars) string { return strconv.FormatInt(v.now.Unix(), 10) },
	"limit":      func(v *vars) string { return strconv.FormatInt(v.limit.Count, 10) },
	"window_s":   func(v *vars) string { return strconv.FormatFloat(v.limit.Window.Seconds(), 'f', -1, 64) },
	"window_ms":  func(v *vars) string { return strconv.FormatInt(v.limit.Window.Milliseconds(), 10) },
	"gateway":    func(v *vars) string { return strconv.Itoa(v.gateway) },
	"request_id": func(v *vars) string { return strconv.FormatUint(v.requestID, 10) },
}

// CheckTemplate reports whether s is a valid key or argument template for
// a redis-script target (see parseTemplate), for scenario validation.
func CheckTemplate(s string) error {
	_, err := parseTemplate(s)
	return err
}

// parseTemplate reads a key or argument template: {name} is a
// placeholder, and {{ and }} stand for a literal brace, so a Cluster hash
// tag can be written: "rl:{{{id}}}:tokens" gives "rl:{user-1}:tokens".
func parseTemplate(s string) (template, error) {
	var t template
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t = append(t, segment{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case (c == '{' || c == '}') && i+1 < len(s) && s[i+1] == c:
			lit.WriteByte(c)
			i++
		case c == '}':
			return nil, errors.New("'}' without '{' (write }} for a literal brace)")
		case c == '{':
			end := strings.IndexByte(s[i+1:], '}')
			if end < 0 {
				return nil, errors.New("unclosed '{' (write {{ for a literal brace)")
			}
			name := s[i+1 : i+1+end]
			if _, ok := templateVars[name]; !ok {
				return nil, fmt.Errorf("unknown placeholder {%s} (want id, now_ms, now_s, limit, window_s, window_ms, gateway or request_id; {{ and }} are literal braces)", name)
			}
			flush()
			t = append(t, segment{v: name})
			i += 1 + end
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return t, nil
}

func (t template) expand(v *vars) string {
	if len(t) == 1 && t[0].v == "" {
		return t[0].lit
	}
	var b strings.Builder
	for _, s := range t {
		if s.v == "" {
			b.WriteString(s.lit)
		} else {
			b.WriteString(templateVars[s.v](v))
		}
	}
	return b.String()
}

// Rule says which script reply means allowed: an optional element index
// ("[1]", 1-based as in Lua, for a table reply), a comparison and a number,
// a quoted string or nil.
type Rule struct {
	Index int // 0: the reply itself
	Op    string
	Num   float64
	Str   string
	Kind  byte // 'n' number, 's' string, '0' nil
}

var ruleOps = []string{"==", "!=", ">=", "<=", ">", "<"}

// ParseRule reads a rule such as "== 1", "> 0", "[1] == 1", "== 'OK'" or
// "!= nil".
func ParseRule(s string) (Rule, error) {
	var r Rule
	in := strings.TrimSpace(s)
	if in == "" {
		return r, errors.New("allowed rule is empty (e.g. \"== 1\")")
	}
	var err error
	if r.Index, in, err = cutIndex(in); err != nil {
		return r, fmt.Errorf("allowed rule %q: %w", s, err)
	}
	for _, op := range ruleOps {
		if strings.HasPrefix(in, op) {
			r.Op = op
			break
		}
	}
	if r.Op == "" {
		return r, fmt.Errorf("allowed rule %q: want a comparison (==, !=, >, >=, <, <=)", s)
	}
	val := strings.TrimSpace(in[len(r.Op):])
	switch {
	case val == "nil":
		r.Kind = '0'
	case len(val) >= 2 && (val[0] == '\'' || val[0] == '"') && val[len(val)-1] == val[0]:
		r.Kind, r.Str = 's', val[1:len(val)-1]
	default:
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return r, fmt.Errorf("allowed rule %q: compare with a number, a quoted string or nil", s)
		}
		r.Kind, r.Num = 'n', f
	}
	if r.Kind != 'n' && r.Op != "==" && r.Op != "!=" {
		return r, fmt.Errorf("allowed rule %q: strings and nil compare only with == or !=", s)
	}
	return r, nil
}

// Match reports whether reply satisfies the rule. A reply of the wrong shape
// (no such element, text where a number is wanted, a table where the rule
// reads a value) is an error, never an answer: a rule cannot say allowed of
// what it cannot read.
func (r Rule) Match(reply any) (bool, error) {
	what := "the reply"
	if r.Index > 0 {
		var err error
		if reply, err = element(reply, r.Index); err != nil {
			return false, fmt.Errorf("allowed rule: %w", err)
		}
		what = fmt.Sprintf("element %d of the reply", r.Index)
	} else if arr, ok := reply.([]any); ok {
		// A table without an index: its first element, as most limiters
		// answer {allowed, remaining, ...}. An empty table is Lua's nil.
		reply = nil
		if len(arr) > 0 {
			reply = arr[0]
		}
		what = "the first element of the reply"
	}
	reply, err := readable(reply)
	if err != nil {
		return false, fmt.Errorf("allowed rule %s cannot read %s: %w", r, what, err)
	}
	switch r.Kind {
	case '0':
		return (reply == nil) == (r.Op == "=="), nil
	case 's':
		var s string
		switch v := reply.(type) {
		case string:
			s = v
		case int64:
			s = strconv.FormatInt(v, 10)
		case nil:
			return r.Op == "!=", nil
		}
		return (s == r.Str) == (r.Op == "=="), nil
	}
	var f float64
	switch v := reply.(type) {
	case int64:
		f = float64(v)
	case string:
		var err error
		if f, err = strconv.ParseFloat(v, 64); err != nil {
			return false, fmt.Errorf("allowed rule compares numbers, script returned %q", v)
		}
	case nil:
		// Lua false and nil come back as a nil reply: no number, so only
		// "!=" holds.
		return r.Op == "!=", nil
	}
	switch r.Op {
	case "==":
		return f == r.Num, nil
	case "!=":
		return f != r.Num, nil
	case ">":
		return f > r.Num, nil
	case ">=":
		return f >= r.Num, nil
	case "<":
		return f < r.Num, nil
	default:
		return f <= r.Num, nil
	}
}

// readable is v as a rule or a retry-after reads it: nil, an integer or
// text (Lua's booleans as RESP3 hands them back become 1 and nil, as over
// RESP2). Anything else, a nested table, an error reply inside a table or
// a map, is an error saying what it was.
func readable(v any) (any, error) {
	switch x := v.(type) {
	case nil, int64, string:
		return v, nil
	case bool:
		if x {
			return int64(1), nil
		}
		return nil, nil
	case []any:
		return nil, fmt.Errorf("it is a nested table (%d elements): the script must answer a number, text or nil there", len(x))
	case map[any]any:
		return nil, fmt.Errorf("it is a map (%d fields): the script must answer a number, text or nil there", len(x))
	case error:
		return nil, fmt.Errorf("it is an error reply: %v", x)
	default:
		return nil, fmt.Errorf("it is a %T: the script must answer a number, text or nil there", v)
	}
}

// String is the rule as written in a scenario, normalised: "[2] == 1".
func (r Rule) String() string {
	var b strings.Builder
	b.WriteByte('"')
	if r.Index > 0 {
		fmt.Fprintf(&b, "[%d] ", r.Index)
	}
	b.WriteString(r.Op)
	b.WriteByte(' ')
	switch r.Kind {
	case '0':
		b.WriteString("nil")
	case 's':
		b.WriteString("'" + r.Str + "'")
	default:
		b.WriteString(strconv.FormatFloat(r.Num, 'g', -1, 64))
	}
	b.WriteByte('"')
	return b.String()
}

// NamespaceTemplate puts ns (a run's own key namespace, such as
// "rlctl-3f9a2c1e:") into a key template right before its first
// placeholder, so every key the template renders starts with the same
// fixed text, ns included: "rl:{id}" becomes "rl:rlctl-3f9a2c1e:{id}". A
// template with no placeholder gets ns appended, after a ':'. It returns
// the new template and the fixed start of every key it renders (the whole
// key when exact is true), for finding the keys again.
func NamespaceTemplate(tpl, ns string) (out, fixed string, exact bool, err error) {
	if _, err := parseTemplate(tpl); err != nil {
		return "", "", false, err
	}
	at := -1
	for i := 0; i < len(tpl); i++ {
		c := tpl[i]
		if (c == '{' || c == '}') && i+1 < len(tpl) && tpl[i+1] == c {
			i++
			continue
		}
		if c == '{' {
			at = i
			break
		}
	}
	literal := func(s string) string {
		return strings.NewReplacer("{{", "{", "}}", "}").Replace(s)
	}
	if at < 0 {
		out = tpl + ":" + strings.TrimSuffix(ns, ":")
		return out, literal(out), true, nil
	}
	return tpl[:at] + ns + tpl[at:], literal(tpl[:at]) + ns, false, nil
}

// ExpandKey is key template tpl as a gateway sends it for identity id at
// now (gateway 0, request 0): enough to tell which Cluster slot the
// identity's keys hash to.
func ExpandKey(tpl, id string, limit rate.Limit, now time.Time) (string, error) {
	t, err := parseTemplate(tpl)
	if err != nil {
		return "", err
	}
	return t.expand(&vars{id: id, now: now, limit: limit}), nil
}
