package suggest

import (
	"slices"
	"testing"
)

func TestNearest(t *testing.T) {
	t.Parallel()
	commands := []string{"inspect", "reset", "repair-ttl"}
	metrics := []string{"ceiling", "ceiling_upper", "ceiling_ratio", "burst", "p99", "p999", "race_excess", "retry_after_missing"}
	for _, tt := range []struct {
		name  string
		typed string
		names []string
		want  []string
	}{
		{"a swap", "inspcet", commands, []string{"inspect"}},
		{"a dropped letter", "rendr", []string{"render", "merge"}, []string{"render"}},
		{"a kind with a letter more", "https", []string{"simulated", "http", "redis-script"}, []string{"http"}},
		{"a near miss before a longer name", "ceilng", metrics, []string{"ceiling"}},
		{"nearest first", "ceil", metrics, []string{"ceiling", "ceiling_upper", "ceiling_ratio"}},
		{"a prefix", "retry", metrics, []string{"retry_after_missing"}},
		{"only the case is wrong", "P99", metrics, []string{"p99"}},
		{"a name that begins it", "p99_latency", metrics, []string{"p99"}},
		{"nothing close", "zzzzzz", metrics, nil},
		{"the name itself is no suggestion", "burst", metrics, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Nearest(tt.typed, tt.names); !slices.Equal(got, tt.want) {
				t.Errorf("Nearest(%q) = %q, want %q", tt.typed, got, tt.want)
			}
		})
	}
}

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	if got, want := DidYouMean("kes", []string{"keys", "ping"}), `; did you mean "keys"?`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := DidYouMean("p9", []string{"p99", "p999", "p50"}), `; did you mean "p99", "p999" or "p50"?`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := DidYouMean("zzz", []string{"keys"}); got != "" {
		t.Errorf("got %q, want nothing", got)
	}
}

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"ab", "ba", 1}, {"kitten", "sitting", 3}, {"inspcet", "inspect", 1}} {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
