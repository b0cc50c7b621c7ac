package threshold

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/suggest"
)

// LimitName is the operand that stands for the published count.
const LimitName = "limit"

// latencySuffix ends the name of every metric measured in milliseconds.
const latencySuffix = "_ms"

// latencyAliases map the short names that compare with durations to the
// metric they read (in milliseconds): each latency metric's name without
// its "_ms", so p99 reads p99_ms and recover reads recover_ms. A new
// latency metric gets its short name with it.
var latencyAliases = func() map[string]string {
	out := map[string]string{}
	for _, n := range metric.Names {
		if short, ok := strings.CutSuffix(n, latencySuffix); ok {
			out[short] = n
		}
	}
	return out
}()

// Op is a comparison operator.
type Op string

// The comparison operators a threshold may use.
const (
	Less         Op = "<"
	LessEqual    Op = "<="
	Greater      Op = ">"
	GreaterEqual Op = ">="
	Equal        Op = "=="
	NotEqual     Op = "!="
)

func (o Op) holds(a, b float64) bool {
	switch o {
	case Less:
		return a < b
	case LessEqual:
		return a <= b
	case Greater:
		return a > b
	case GreaterEqual:
		return a >= b
	case Equal:
		return a == b
	case NotEqual:
		return a != b
	}
	return false
}

// Operand is one side of a threshold: Factor × the value of Name, or the
// constant Factor when Name is empty. Durations are held in milliseconds.
type Operand struct {
	// Name is a metric name from metric.Names, LimitName, or "".
	Name string
	// Factor multiplies Name's value; for a constant it is the value.
	Factor float64
	// Duration says the operand is a time in milliseconds (a latency alias
	// or a constant like 5ms), so it only compares with other durations.
	Duration bool
}

// IsMetric reports whether the operand reads a measured metric.
func (o Operand) IsMetric() bool { return o.Name != "" && o.Name != LimitName }

func (o Operand) value(m map[string]float64, limit rate.Limit) (float64, error) {
	switch o.Name {
	case "":
		return o.Factor, nil
	case LimitName:
		return o.Factor * float64(limit.Count), nil
	}
	v, ok := m[o.Name]
	if !ok {
		return 0, fmt.Errorf("%s was not measured in this scenario", o.Name)
	}
	return o.Factor * v, nil
}

// Threshold is one parsed threshold expression: Left Op Right.
type Threshold struct {
	Expr  string // as written, trimmed
	Left  Operand
	Op    Op
	Right Operand
	Line  int // line in the scenario file, 0 when not from a file
}

// Parse parses "OPERAND OP OPERAND", e.g. "ceiling <= limit",
// "p99 < 5ms", "ceiling <= 1.1 * limit". At least one side must read a
// measured metric, and both sides must be durations or neither.
func Parse(expr string) (Threshold, error) {
	expr = strings.TrimSpace(expr)
	th := Threshold{Expr: expr}
	fail := func(format string, args ...any) (Threshold, error) {
		return Threshold{}, fmt.Errorf("threshold %q: %s", expr, fmt.Sprintf(format, args...))
	}
	i, op := findOp(expr)
	if i < 0 {
		return fail("want OPERAND OP OPERAND with OP one of < <= > >= == !=")
	}
	th.Op = op
	var err error
	if th.Left, err = parseOperand(expr[:i]); err != nil {
		return fail("%v", err)
	}
	if th.Right, err = parseOperand(expr[i+len(op):]); err != nil {
		return fail("%v", err)
	}
	if !th.Left.IsMetric() && !th.Right.IsMetric() {
		return fail("compares no measured metric (want one of %s)", strings.Join(Names(), ", "))
	}
	if th.Left.Duration != th.Right.Duration {
		dur, num := th.Left, th.Right
		if th.Right.Duration {
			dur, num = th.Right, th.Left
		}
		if dur.Name != "" {
			return fail("%s is a latency: compare it with a duration like 5ms, not %s", Alias(dur.Name), describeOperand(num))
		}
		return fail("a duration compares only with a latency (%s), not %s", strings.Join(slices.Sorted(maps.Keys(latencyAliases)), ", "), describeOperand(num))
	}
	return th, nil
}

// Alias is the name a threshold uses for a metric: its latency alias
// ("p99" for p99_ms), else the metric's own name.
func Alias(name string) string {
	for a, m := range latencyAliases {
		if m == name {
			return a
		}
	}
	return name
}

func describeOperand(o Operand) string {
	if o.Name != "" {
		return o.Name
	}
	return "a plain number"
}

// findOp finds the one comparison operator in expr.
func findOp(expr string) (int, Op) {
	at, found := -1, Op("")
	for i := 0; i < len(expr); i++ {
		var op Op
		switch {
		case strings.HasPrefix(expr[i:], "<="), strings.HasPrefix(expr[i:], ">="),
			strings.HasPrefix(expr[i:], "=="), strings.HasPrefix(expr[i:], "!="):
			op = Op(expr[i : i+2])
		case expr[i] == '<' || expr[i] == '>':
			op = Op(expr[i : i+1])
		case expr[i] == '=' || expr[i] == '!':
			return -1, "" // a lone '=' or '!' is a mistake, not an operator
		default:
			continue
		}
		if at >= 0 {
			return -1, "" // two operators: "a < b < c" is not supported
		}
		at, found = i, op
		i += len(op) - 1
	}
	return at, found
}

// parseOperand reads FACTOR ('*' FACTOR)* with at most one name.
func parseOperand(s string) (Operand, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Operand{}, errors.New("missing operand")
	}
	out := Operand{Factor: 1}
	for part := range strings.SplitSeq(s, "*") {
		part = strings.TrimSpace(part)
		if part == "" {
			return Operand{}, fmt.Errorf("%q: missing factor around '*'", s)
		}
		switch {
		case isNameStart(part[0]):
			name, dur, err := resolveName(part)
			if err != nil {
				return Operand{}, err
			}
			if out.Name != "" {
				return Operand{}, fmt.Errorf("%q: at most one name per side", s)
			}
			if dur && out.Duration {
				return Operand{}, fmt.Errorf("%q: a duration times a duration is not a duration", s)
			}
			out.Name, out.Duration = name, out.Duration || dur
		default:
			v, dur, err := parseConstant(part)
			if err != nil {
				return Operand{}, err
			}
			if dur && out.Duration {
				return Operand{}, fmt.Errorf("%q: a duration times a duration is not a duration", s)
			}
			out.Factor *= v
			out.Duration = out.Duration || dur
		}
	}
	if math.IsInf(out.Factor, 0) || math.IsNaN(out.Factor) {
		return Operand{}, fmt.Errorf("%q: number out of range", s)
	}
	return out, nil
}

func isNameStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func resolveName(s string) (name string, duration bool, err error) {
	if s == LimitName {
		return LimitName, false, nil
	}
	if m, ok := latencyAliases[s]; ok {
		return m, true, nil
	}
	if slices.Contains(metric.Names, s) {
		return s, false, nil
	}
	names := append([]string{LimitName}, Names()...)
	if near := suggest.DidYouMean(s, names); near != "" {
		return "", false, fmt.Errorf("unknown name %q%s (rlctl help metrics lists every metric)", s, near)
	}
	return "", false, fmt.Errorf("unknown name %q (want limit, a metric: %s)", s, strings.Join(Names(), ", "))
}

// parseConstant reads a number ("40", "1.1") or a Go duration ("5ms"),
// returning durations in milliseconds.
func parseConstant(s string) (float64, bool, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpPiInN_") {
		return v, false, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false, fmt.Errorf("%q is not a number, a duration or a name", s)
	}
	return float64(d) / float64(time.Millisecond), true, nil
}

// Names lists every name a threshold may use besides limit: the metric
// names and the latency aliases.
func Names() []string {
	return append(slices.Clone(metric.Names), slices.Sorted(maps.Keys(latencyAliases))...)
}

// Eval checks the threshold against measured metrics. observed is the value
// of the metric side (the left one when both are metrics), unscaled, so a
// report can show "ceiling = 40" beside "ceiling <= limit". A metric absent
// from m is an error (the threshold failed to be checked), never a pass.
func (t Threshold) Eval(m map[string]float64, limit rate.Limit) (observed float64, pass bool, err error) {
	side, _ := t.sides()
	if v, ok := m[side.Name]; ok {
		observed = v
	}
	a, err := t.Left.value(m, limit)
	if err != nil {
		return observed, false, err
	}
	b, err := t.Right.value(m, limit)
	if err != nil {
		return observed, false, err
	}
	return observed, t.Op.holds(a, b), nil
}

// String returns the expression as written.
func (t Threshold) String() string { return t.Expr }

// MarshalText gives the expression as written, so a saved threshold is
// the text a scenario file holds.
func (t Threshold) MarshalText() ([]byte, error) { return []byte(t.Expr), nil }

// UnmarshalText parses a saved expression (see Parse).
func (t *Threshold) UnmarshalText(b []byte) error {
	th, err := Parse(string(b))
	if err != nil {
		return err
	}
	*t = th
	return nil
}

// sides returns the side that reads a metric and the other one; the left
// side when both do.
func (t Threshold) sides() (side, other Operand) {
	if !t.Left.IsMetric() {
		return t.Right, t.Left
	}
	return t.Left, t.Right
}

// Bound is the value t holds its metric to, in the metric's own terms:
// the other side divided by the metric side's factor, so "ceiling <=
// 1.5*limit" with a limit of 20 gives 30 and "2*ceiling < 30" gives 15. ok
// is false when there is no such value (a metric side scaled by zero or
// less, or another metric that was not measured).
func (t Threshold) Bound(m map[string]float64, limit rate.Limit) (bound float64, ok bool) {
	side, other := t.sides()
	if side.Factor <= 0 {
		return 0, false
	}
	v, err := other.value(m, limit)
	if err != nil {
		return 0, false
	}
	return v / side.Factor, true
}

// Unit is "ms" when the metric t reads is a latency, else "": the unit of
// its observed value and bound.
func (t Threshold) Unit() string {
	side, _ := t.sides()
	if strings.HasSuffix(side.Name, latencySuffix) {
		return "ms"
	}
	return ""
}

// BoundWritten reports whether t's bound is written out in its expression
// ("race_excess > 0", "p99 < 5ms"), so a reader needs only the observed
// value beside it.
func (t Threshold) BoundWritten() bool {
	side, other := t.sides()
	return other.Name == "" && side.Factor == 1
}
