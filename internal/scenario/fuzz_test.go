package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/rate"
)

// FuzzParse feeds arbitrary bytes to the loader: it must never panic, and
// every error it reports must name the file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(base))
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Add([]byte("name: x\n---\n---\nlimit: 1/s\n"))
	f.Add([]byte("target: {endpoints: [{share: .5}, {share: .5}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		scs, err := Parse(data, "fuzz.yaml")
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.yaml") {
					t.Fatalf("error line without the file: %q", line)
				}
			}
			return
		}
		for _, sc := range scs {
			if sc.Name == "" || sc.Limit.Count <= 0 || sc.Traffic.MaxRequests < 1 || sc.Traffic.Duration <= 0 || len(sc.Target.Endpoints) == 0 {
				t.Fatalf("accepted an incomplete scenario: %+v", sc)
			}
		}
	})
}

// FuzzParseThreshold: never panics; a parsed threshold always evaluates
// without panicking, and fails (with an error) on empty metrics.
func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"ceiling <= limit", "p99 < 5ms", "ceiling < limit * 1.1", "2*limit>=burst", "a <", "<=", "p99<1h*2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		th, err := ParseThreshold(expr)
		if err != nil {
			return
		}
		if !th.Left.IsMetric() && !th.Right.IsMetric() {
			t.Fatalf("%q parsed without a metric side", expr)
		}
		if _, pass, err := th.Eval(analysis.Metrics{}, rate.Limit{Count: 1, Window: 1}); err == nil || pass {
			t.Fatalf("%q passed or evaluated over no metrics", expr)
		}
		m := analysis.Metrics{}
		for _, n := range analysis.Names {
			m[n] = 1
		}
		if _, _, err := th.Eval(m, rate.Limit{Count: 1, Window: 1}); err != nil {
			t.Fatalf("%q failed over all metrics: %v", expr, err)
		}
	})
}
