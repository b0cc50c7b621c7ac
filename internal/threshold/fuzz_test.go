package threshold

import (
	"testing"

	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// FuzzParse: a parsed threshold reads a metric on one side, reads back from
// its own text as the same threshold, fails (with an error) over no
// metrics and evaluates without error over all of them.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"ceiling <= limit", "p99 < 5ms", "ceiling < limit * 1.1", "2*limit>=burst", "a <", "<=", "p99<1h*2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		th, err := Parse(expr)
		if err != nil {
			return
		}
		if !th.Left.IsMetric() && !th.Right.IsMetric() {
			t.Fatalf("%q parsed without a metric side", expr)
		}
		text, _ := th.MarshalText()
		var back Threshold
		if err := back.UnmarshalText(text); err != nil || back != th {
			t.Fatalf("%q read back from %q as %+v (%v), want %+v", expr, text, back, err, th)
		}
		if _, pass, err := th.Eval(map[string]float64{}, rate.Limit{Count: 1, Window: 1}); err == nil || pass {
			t.Fatalf("%q passed or evaluated over no metrics", expr)
		}
		m := map[string]float64{}
		for _, n := range metric.Names {
			m[n] = 1
		}
		if _, _, err := th.Eval(m, rate.Limit{Count: 1, Window: 1}); err != nil {
			t.Fatalf("%q failed over all metrics: %v", expr, err)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("ceiling <= 1.1 * limit"); err != nil {
			b.Fatal(err)
		}
	}
}
