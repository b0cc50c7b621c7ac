package traffic

import (
	"slices"
	"testing"
)

func TestFormNames(t *testing.T) {
	f := FormDraft11 | FormRetryAfter | FormXRateLimit
	names := f.Names()
	if !slices.Equal(names, []string{"retry-after", "draft-11", "x-ratelimit"}) {
		t.Errorf("names %v", names)
	}
	if back := ParseForms(append(names, "draft-99")); back != f {
		t.Errorf("ParseForms(%v) = %v, want %v", names, back, f)
	}
}
