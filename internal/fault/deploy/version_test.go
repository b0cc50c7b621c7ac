package deploy

import "testing"

func TestAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"6.2.0", true}, {"6.2.14", true}, {"7.0.15", true}, {"10.0.0", true},
		{"6.0.16", false}, {"5.0.7", false}, {"6.1.9", false}, {"", false}, {"x.y", false},
	} {
		if got := atLeast(tc.v, 6, 2); got != tc.want {
			t.Errorf("atLeast(%q, 6, 2) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
