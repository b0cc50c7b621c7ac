package threshold

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

func TestParse(t *testing.T) {
	t.Parallel()
	named := func(n string) Operand { return Operand{Name: n, Factor: 1} }
	tests := []struct {
		expr        string
		left, right Operand
		op          Op
	}{
		{"ceiling <= limit", named("ceiling"), Operand{Name: LimitName, Factor: 1}, LessEqual},
		{"race_excess==0", named("race_excess"), Operand{Factor: 0}, Equal},
		{"p99 < 5ms", Operand{Name: metric.P99, Factor: 1, Duration: true}, Operand{Factor: 5, Duration: true}, Less},
		{"p999 <= 1.5s", Operand{Name: metric.P999, Factor: 1, Duration: true}, Operand{Factor: 1500, Duration: true}, LessEqual},
		{"max < 250us", Operand{Name: metric.Max, Factor: 1, Duration: true}, Operand{Factor: 0.25, Duration: true}, Less},
		{"p99_ms < 5", named(metric.P99), Operand{Factor: 5}, Less},
		{"ceiling_ratio >= 40", named("ceiling_ratio"), Operand{Factor: 40}, GreaterEqual},
		{"ceiling <= 2*limit", named("ceiling"), Operand{Name: LimitName, Factor: 2}, LessEqual},
		{"ceiling < limit * 1.5", named("ceiling"), Operand{Name: LimitName, Factor: 1.5}, Less},
		{"2 * limit > ceiling", Operand{Name: LimitName, Factor: 2}, named("ceiling"), Greater},
		{"limit != ceiling", Operand{Name: LimitName, Factor: 1}, named("ceiling"), NotEqual},
		{"burst <= ceiling_upper", named("burst"), named("ceiling_upper"), LessEqual},
		{"recover < 2 * 1s", Operand{Name: metric.RecoverMs, Factor: 1, Duration: true}, Operand{Factor: 2000, Duration: true}, Less},
		{"send_lag_p99 < 1ms", Operand{Name: metric.SendLagP99, Factor: 1, Duration: true}, Operand{Factor: 1, Duration: true}, Less},
		{"  slipped == 0  ", named("slipped"), Operand{Factor: 0}, Equal},
		{"fail_open < 1e3", named("fail_open"), Operand{Factor: 1000}, Less},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			th, err := Parse(tt.expr)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if th.Left != tt.left || th.Right != tt.right || th.Op != tt.op {
				t.Errorf("got %+v %s %+v, want %+v %s %+v", th.Left, th.Op, th.Right, tt.left, tt.op, tt.right)
			}
			if th.Expr != strings.TrimSpace(tt.expr) {
				t.Errorf("Expr = %q", th.Expr)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ expr, want string }{
		{"", "want OPERAND OP OPERAND"},
		{"ceiling", "want OPERAND OP OPERAND"},
		{"ceiling = limit", "want OPERAND OP OPERAND"},
		{"ceiling <> limit", "want OPERAND OP OPERAND"},
		{"0 < ceiling < limit", "want OPERAND OP OPERAND"},
		{"ceiling <=", "missing operand"},
		{"leak <= limit", `unknown name "leak"`},
		{"Ceiling <= limit", `unknown name "Ceiling"; did you mean "ceiling"?`},
		{"ceilng <= limit", `unknown name "ceilng"; did you mean "ceiling"? (rlctl help metrics lists every metric)`},
		{"race_exces == 0", `unknown name "race_exces"; did you mean "race_excess"?`},
		{"p99 < 2*limt", `unknown name "limt"; did you mean "limit"?`},
		{"p99_latency < 5ms", `unknown name "p99_latency"; did you mean`},
		{"limit <= 5", "compares no measured metric"},
		{"1 < 2", "compares no measured metric"},
		{"p99 < 5", "p99 is a latency: compare it with a duration like 5ms, not a plain number"},
		{"p99 < limit", "p99 is a latency: compare it with a duration like 5ms, not limit"},
		{"ceiling < 5ms", "a duration compares only with a latency (election, failover_deny, failover_detect, max, p50, p90, p99, p999, recover, retry_wait_excess, send_lag_p99), not ceiling"},
		{"send_lag_p99 < 1", "send_lag_p99 is a latency"},
		{"ceiling * burst < 5", "at most one name per side"},
		{"p99 < 5ms * 2ms", "a duration times a duration"},
		{"ceiling < 2 *", "missing factor"},
		{"ceiling < five", `unknown name "five"`},
		{"ceiling < 5x", `"5x" is not a number, a duration or a name`},
		{"ceiling < 0x10", `"0x10" is not a number`},
		{"ceiling < 1e400", `"1e400" is not a number`},
		{"ceiling < 1e300 * 1e300", "number out of range"},
		{"ceiling < NaN", `unknown name "NaN"`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.expr)
			if err == nil {
				t.Fatalf("want an error containing %q, got none", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestThresholdEval(t *testing.T) {
	t.Parallel()
	limit := rate.Limit{Count: 20, Window: time.Second}
	m := map[string]float64{
		metric.Ceiling: 40, metric.CeilingRatio: 2, metric.RaceExcess: 0,
		metric.P99: 4.2, metric.Burst: 39,
	}
	tests := []struct {
		expr     string
		observed float64
		pass     bool
		err      string
	}{
		{"ceiling <= limit", 40, false, ""},
		{"ceiling <= 2*limit", 40, true, ""},
		{"ceiling < 2*limit", 40, false, ""},
		{"limit * 2 >= ceiling", 40, true, ""},
		{"ceiling_ratio >= 2", 2, true, ""},
		{"race_excess == 0", 0, true, ""},
		{"race_excess != 0", 0, false, ""},
		{"p99 < 5ms", 4.2, true, ""},
		{"p99 < 4ms", 4.2, false, ""},
		{"p99 > 4200us", 4.2, false, ""},
		{"2 * ceiling > 79", 40, true, ""},
		{"burst < ceiling", 39, true, ""},
		{"slipped == 0", 0, false, "slipped was not measured in this scenario"},
		{"p999 < 10ms", 0, false, "p999_ms was not measured in this scenario"},
		{"burst <= ceiling_upper", 39, false, "ceiling_upper was not measured in this scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			th, err := Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			obs, pass, err := th.Eval(m, limit)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				if pass {
					t.Error("a threshold over an unmeasured metric passed")
				}
				return
			}
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if obs != tt.observed || pass != tt.pass {
				t.Errorf("Eval = (%v, %v), want (%v, %v)", obs, pass, tt.observed, tt.pass)
			}
		})
	}
}

func ExampleParse() {
	th, err := Parse("p99 < 5ms")
	if err != nil {
		panic(err)
	}
	m := map[string]float64{metric.P99: 3.5}
	observed, pass, err := th.Eval(m, rate.Limit{Count: 100, Window: time.Minute})
	fmt.Println(observed, pass, err)

	th, _ = Parse("race_excess == 0")
	_, pass, err = th.Eval(m, rate.Limit{Count: 100, Window: time.Minute})
	fmt.Println(pass, err)
	// Output:
	// 3.5 true <nil>
	// false race_excess was not measured in this scenario
}

// TestBound: a threshold says the value it holds its metric to, in the
// metric's own terms, so "ceiling <= 1.5*limit (observed 78)" also says
// "bound 30".
func TestBound(t *testing.T) {
	t.Parallel()
	m := map[string]float64{metric.Ceiling: 78, metric.CeilingUpper: 80, metric.P99: 6}
	limit := rate.Limit{Count: 20, Window: time.Second}
	for _, tc := range []struct {
		expr  string
		bound float64
		none  bool
	}{
		{"ceiling <= 1.5*limit", 30, false},
		{"ceiling <= limit", 20, false},
		{"limit >= ceiling", 20, false},
		{"2*ceiling < 30", 15, false},
		{"ceiling <= ceiling_upper", 80, false},
		{"p99 < 5ms", 5, false},
		{"0*ceiling < 1", 0, true},
		{"ceiling <= burst", 0, true}, // burst was not measured
	} {
		th, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		b, ok := th.Bound(m, limit)
		switch {
		case tc.none && ok:
			t.Errorf("%s: bound %v, want none", tc.expr, b)
		case !tc.none && (!ok || b != tc.bound):
			t.Errorf("%s: bound %v (%v), want %v", tc.expr, b, ok, tc.bound)
		}
	}
}

// TestUnitAndBoundWritten: what a report needs to print a threshold's
// figures comes from the parsed form: the unit of the metric it reads and
// whether its bound is written out in the expression.
func TestUnitAndBoundWritten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr    string
		unit    string
		written bool
	}{
		{"p99 < 5ms", "ms", true},
		{"p99_ms < 5", "ms", true},
		{"5ms > recover", "ms", true},
		{"race_excess > 0", "", true},
		{"ceiling <= limit", "", false},
		{"ceiling <= 1.5*limit", "", false},
		{"2*ceiling < 30", "", false},
		{"limit >= ceiling", "", false},
		{"burst <= ceiling_upper", "", false},
	} {
		th, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if th.Unit() != tc.unit || th.BoundWritten() != tc.written {
			t.Errorf("%s: unit %q, written %v; want %q, %v", tc.expr, th.Unit(), th.BoundWritten(), tc.unit, tc.written)
		}
	}
}

// TestLatencyAliases: every latency metric, and only those, has a short
// name that compares with durations.
func TestLatencyAliases(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"p50": metric.P50, "p90": metric.P90, "p99": metric.P99, "p999": metric.P999, "max": metric.Max,
		"recover": metric.RecoverMs, "send_lag_p99": metric.SendLagP99, "retry_wait_excess": metric.RetryWaitExcess,
		"election": metric.ElectionMs, "failover_detect": metric.FailoverDetectMs, "failover_deny": metric.FailoverDenyMs,
	}
	for short, name := range want {
		if latencyAliases[short] != name || Alias(name) != short {
			t.Errorf("%s: alias of %s is %q, resolves to %q", short, name, Alias(name), latencyAliases[short])
		}
	}
	for short := range latencyAliases {
		if _, ok := want[short]; !ok {
			t.Errorf("unexpected latency alias %s", short)
		}
	}
	if Alias(metric.Ceiling) != metric.Ceiling {
		t.Errorf("a count's alias is %q, want its own name", Alias(metric.Ceiling))
	}
}

// TestText: a threshold saved as text reads back as the same threshold,
// and a bad one fails to read.
func TestText(t *testing.T) {
	t.Parallel()
	th, err := Parse(" ceiling <= 1.5 * limit ")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal([]Threshold{th})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal([]string{"ceiling <= 1.5 * limit"}); string(b) != string(want) {
		t.Errorf("saved as %s, want %s", b, want)
	}
	var back []Threshold
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 1 || back[0] != th {
		t.Errorf("read back %+v, want %+v", back, th)
	}
	if err := json.Unmarshal([]byte(`["leak <= limit"]`), &back); err == nil || !strings.Contains(err.Error(), `unknown name "leak"`) {
		t.Errorf("a bad saved threshold: %v", err)
	}
}
