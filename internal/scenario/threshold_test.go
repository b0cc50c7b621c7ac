package scenario

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/rate"
)

func TestParseThreshold(t *testing.T) {
	t.Parallel()
	metric := func(n string) Operand { return Operand{Name: n, Factor: 1} }
	tests := []struct {
		expr        string
		left, right Operand
		op          Op
	}{
		{"ceiling <= limit", metric("ceiling"), Operand{Name: LimitName, Factor: 1}, LessEqual},
		{"race_excess==0", metric("race_excess"), Operand{Factor: 0}, Equal},
		{"p99 < 5ms", Operand{Name: analysis.P99, Factor: 1, Duration: true}, Operand{Factor: 5, Duration: true}, Less},
		{"p999 <= 1.5s", Operand{Name: analysis.P999, Factor: 1, Duration: true}, Operand{Factor: 1500, Duration: true}, LessEqual},
		{"max < 250us", Operand{Name: analysis.Max, Factor: 1, Duration: true}, Operand{Factor: 0.25, Duration: true}, Less},
		{"p99_ms < 5", metric(analysis.P99), Operand{Factor: 5}, Less},
		{"ceiling_ratio >= 40", metric("ceiling_ratio"), Operand{Factor: 40}, GreaterEqual},
		{"ceiling <= 2*limit", metric("ceiling"), Operand{Name: LimitName, Factor: 2}, LessEqual},
		{"ceiling < limit * 1.5", metric("ceiling"), Operand{Name: LimitName, Factor: 1.5}, Less},
		{"2 * limit > ceiling", Operand{Name: LimitName, Factor: 2}, metric("ceiling"), Greater},
		{"limit != ceiling", Operand{Name: LimitName, Factor: 1}, metric("ceiling"), NotEqual},
		{"burst <= ceiling_upper", metric("burst"), metric("ceiling_upper"), LessEqual},
		{"recover < 2 * 1s", Operand{Name: analysis.RecoverMs, Factor: 1, Duration: true}, Operand{Factor: 2000, Duration: true}, Less},
		{"send_lag_p99 < 1ms", Operand{Name: analysis.SendLagP99, Factor: 1, Duration: true}, Operand{Factor: 1, Duration: true}, Less},
		{"  slipped == 0  ", metric("slipped"), Operand{Factor: 0}, Equal},
		{"fail_open < 1e3", metric("fail_open"), Operand{Factor: 1000}, Less},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			th, err := ParseThreshold(tt.expr)
			if err != nil {
				t.Fatalf("ParseThreshold: %v", err)
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

func TestParseThresholdErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ expr, want string }{
		{"", "want OPERAND OP OPERAND"},
		{"ceiling", "want OPERAND OP OPERAND"},
		{"ceiling = limit", "want OPERAND OP OPERAND"},
		{"ceiling <> limit", "want OPERAND OP OPERAND"},
		{"0 < ceiling < limit", "want OPERAND OP OPERAND"},
		{"ceiling <=", "missing operand"},
		{"leak <= limit", `unknown name "leak"`},
		{"Ceiling <= limit", `unknown name "Ceiling"`},
		{"limit <= 5", "compares no measured metric"},
		{"1 < 2", "compares no measured metric"},
		{"p99 < 5", "p99 is a latency: compare it with a duration like 5ms, not a plain number"},
		{"p99 < limit", "p99 is a latency: compare it with a duration like 5ms, not limit"},
		{"ceiling < 5ms", "a duration compares only with a latency (max, p50, p90, p99, p999, recover, retry_wait_excess, send_lag_p99), not ceiling"},
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
			_, err := ParseThreshold(tt.expr)
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
	m := analysis.Metrics{
		analysis.Ceiling: 40, analysis.CeilingRatio: 2, analysis.RaceExcess: 0,
		analysis.P99: 4.2, analysis.Burst: 39,
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
			th, err := ParseThreshold(tt.expr)
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

func ExampleParseThreshold() {
	th, err := ParseThreshold("p99 < 5ms")
	if err != nil {
		panic(err)
	}
	m := analysis.Metrics{analysis.P99: 3.5}
	observed, pass, err := th.Eval(m, rate.Limit{Count: 100, Window: time.Minute})
	fmt.Println(observed, pass, err)

	th, _ = ParseThreshold("race_excess == 0")
	_, pass, err = th.Eval(m, rate.Limit{Count: 100, Window: time.Minute})
	fmt.Println(pass, err)
	// Output:
	// 3.5 true <nil>
	// false race_excess was not measured in this scenario
}
