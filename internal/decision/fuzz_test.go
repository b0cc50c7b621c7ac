package decision

import (
	"testing"
	"time"
)

// FuzzDecidedAt: any time a gateway formats reads back to the microsecond,
// and whatever ParseDecidedAt accepts formats and parses back to itself
// (to the microsecond, the header's precision).
func FuzzDecidedAt(f *testing.F) {
	f.Add(int64(1764460800123456), "1764460800.123456")
	f.Add(int64(0), "2026-11-30T10:00:00.5Z")
	f.Add(int64(-1), "12.")
	f.Fuzz(func(t *testing.T, us int64, s string) {
		us %= 1e17 // within the years the formats can carry
		if us >= 0 {
			at := time.UnixMicro(us)
			got, ok := ParseDecidedAt(FormatDecidedAt(at))
			if !ok || !got.Equal(at) {
				t.Fatalf("%v formatted as %q read back as %v, %v", at, FormatDecidedAt(at), got, ok)
			}
		}
		p, ok := ParseDecidedAt(s)
		if !ok || p.Before(time.Unix(0, 0)) || p.After(time.Unix(1e11, 0)) {
			return
		}
		want := p.Truncate(time.Microsecond)
		again, ok := ParseDecidedAt(FormatDecidedAt(p))
		if !ok || !again.Equal(want) {
			t.Fatalf("%q read as %v; formatted and read again: %v, %v", s, p, again, ok)
		}
	})
}
