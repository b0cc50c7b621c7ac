package scripttarget

import (
	"testing"
	"time"
)

// FuzzParseRetryRule: a rule the parser accepts reads a value placed
// where it says, in its unit; anything else is an error, never a panic.
func FuzzParseRetryRule(f *testing.F) {
	for _, s := range []string{"", "ms", "s", "[2] ms", "[1]s", "[0] ms", "[3", "[x] s", "[2] minutes"} {
		f.Add(s, int64(7))
	}
	f.Fuzz(func(t *testing.T, s string, v int64) {
		r, err := ParseRetryRule(s)
		if err != nil || r.Unit == 0 {
			return
		}
		if r.Unit != time.Millisecond && r.Unit != time.Second {
			t.Fatalf("%q: unit %v", s, r.Unit)
		}
		if r.Index < 0 || r.Index > 1<<20 {
			return
		}
		v = max(0, v%100000)
		var reply any = v
		if r.Index > 0 {
			arr := make([]any, r.Index)
			arr[r.Index-1] = v
			reply = arr
		}
		got, err := r.Read(reply)
		if err != nil || got != time.Duration(v)*r.Unit {
			t.Fatalf("%q on %v: %v, %v; want %v", s, reply, got, err, time.Duration(v)*r.Unit)
		}
	})
}
