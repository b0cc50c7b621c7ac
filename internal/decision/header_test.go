package decision

import (
	"testing"
	"time"
)

func TestDecidedAtRoundTrip(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{time.UnixMicro(1_764_000_000_123_456), time.Unix(1_764_000_000, 0), time.UnixMicro(7)} {
		v := FormatDecidedAt(at)
		got, ok := ParseDecidedAt(v)
		if !ok || !got.Equal(at) {
			t.Errorf("%v written as %q read back as %v (ok %v)", at, v, got, ok)
		}
	}
}

func TestParseDecidedAt(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Time{
		"1764000000":                   time.Unix(1_764_000_000, 0),
		" 1764000000.5 ":               time.Unix(1_764_000_000, 500_000_000),
		"1764000000.123456789":         time.Unix(1_764_000_000, 123_456_789),
		"2026-11-30T03:00:00.000123Z":  time.Date(2026, 11, 30, 3, 0, 0, 123_000, time.UTC),
		"2026-11-30T04:00:00.25+01:00": time.Date(2026, 11, 30, 3, 0, 0, 250_000_000, time.UTC),
	} {
		got, ok := ParseDecidedAt(v)
		if !ok || !got.Equal(want) {
			t.Errorf("ParseDecidedAt(%q) = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-5", "1.2.3", "1e9", "1764000000.", "1764000000.1234567890", "17640000000000", "Mon, 30 Nov 2026 03:00:00 GMT"} {
		if got, ok := ParseDecidedAt(v); ok {
			t.Errorf("ParseDecidedAt(%q) = %v, want refused", v, got)
		}
	}
}
