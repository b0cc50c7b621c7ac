package rate

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Limit
		err  bool
	}{
		{in: "100/1m", want: Limit{100, time.Minute}},
		{in: "10/s", want: Limit{10, time.Second}},
		{in: "5000/1h", want: Limit{5000, time.Hour}},
		{in: "20/500ms", want: Limit{20, 500 * time.Millisecond}},
		{in: " 7 / 2s ", want: Limit{7, 2 * time.Second}},
		{in: "100", err: true},
		{in: "0/1m", err: true},
		{in: "-1/1m", err: true},
		{in: "x/1m", err: true},
		{in: "10/", err: true},
		{in: "10/0s", err: true},
		{in: "10/-1s", err: true},
		{in: "10/fortnight", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.err {
				if err == nil {
					t.Fatalf("Parse(%q) = %v, want error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestStringRoundTrip(t *testing.T) {
	t.Parallel()
	for _, l := range []Limit{{100, time.Minute}, {10, time.Second}, {3, 90 * time.Minute}, {20, 1500 * time.Millisecond}, {1, 2 * time.Hour}} {
		back, err := Parse(l.String())
		if err != nil || back != l {
			t.Errorf("Parse(%q) = %v, %v; want %v", l.String(), back, err, l)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"100/1m", "10/s", "1/1ns", "x", "9/", "/", "5/1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			return
		}
		if l.Count <= 0 || l.Window <= 0 {
			t.Fatalf("Parse(%q) accepted %v", s, l)
		}
		back, err := Parse(l.String())
		if err != nil || back != l {
			t.Fatalf("round trip of %q: %v -> %q -> %v, %v", s, l, l.String(), back, err)
		}
	})
}
