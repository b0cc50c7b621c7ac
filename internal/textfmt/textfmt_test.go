package textfmt

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestNum(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {20, "20"}, {-3, "-3"}, {15.05, "15.05"}, {2.0, "2"}, {2.4, "2.4"},
		{116.6141, "116.614"}, {0.2534, "0.253"}, {1.4034, "1.403"}, {-0.0001, "0"},
		{math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"},
	} {
		if got := Num(tc.in); got != tc.want {
			t.Errorf("Num(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Ratio(2); got != "2×" {
		t.Errorf("Ratio(2) = %q", got)
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		got, want string
	}{
		{Count(1, "scenario"), "1 scenario"},
		{Count(15, "scenario"), "15 scenarios"},
		{Count(int64(1), "key"), "1 key"},
		{Count(0, "key"), "0 keys"},
		{Count(uint64(1), "request"), "1 request"},
		{Count(2.0, "request"), "2 requests"},
		{Count(1, "identity"), "1 identity"},
		{Count(3, "identity"), "3 identities"},
		{Count(2, "gateway"), "2 gateways"},
		{Count(2, "day"), "2 days"},
		{Count(2, "pass"), "2 passes"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestWrap(t *testing.T) {
	t.Parallel()
	text := "Ten gateways each keep their own fixed-window counter. Behind a round-robin\n  balancer every gateway sees a tenth of one user's traffic and none refuses."
	lines := Wrap(text, 40)
	for _, l := range lines {
		if len([]rune(l)) > 40 {
			t.Errorf("line %q is longer than 40", l)
		}
	}
	if got := strings.Join(lines, " "); got != strings.Join(strings.Fields(text), " ") {
		t.Errorf("wrapping lost or changed words: %q", got)
	}
	if got := Wrap("", 10); got != nil {
		t.Errorf("empty text gives %q, want no lines", got)
	}
	if got := Wrap("a verylongwordindeed b", 5); !slices.Equal(got, []string{"a", "verylongwordindeed", "b"}) {
		t.Errorf("long word: %q", got)
	}
}

func TestPercent(t *testing.T) {
	for share, want := range map[float64]string{
		0: "0%", 0.01: "1%", 0.2: "20%", 0.604: "60.4%", 1: "100%", 0.33333: "33.3%", 0.0001234: "0.012%",
	} {
		if got := Percent(share); got != want {
			t.Errorf("Percent(%v) = %q, want %q", share, got, want)
		}
	}
}
