package scenario_test

import (
	"fmt"
	"github.com/rlctl/rlctl/internal/scenario"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// TestDurationCap: a run longer than MaxDuration is refused at load time,
// naming the file, line, field and the cap (exit 2); one of exactly the
// cap loads. The field's documentation states the same cap.
func TestDurationCap(t *testing.T) {
	t.Parallel()
	over := base + "  duration: 1000h\n"
	_, err := scenario.Parse([]byte(over), "long.yaml")
	if err == nil {
		t.Fatal("duration 1000h loaded, want it refused")
	}
	if want := "long.yaml:7: traffic.duration: 1000h0m0s is longer than the cap of 24h"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q, want it to contain %q", err, want)
	}
	if exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("exit %d, want %d (usage)", exitcode.Of(err), exitcode.Usage)
	}
	if _, err := scenario.Parse([]byte(base+"  duration: 24h\n"), "day.yaml"); err != nil {
		t.Fatalf("duration of exactly the cap: %v", err)
	}
	for _, f := range scenario.Fields() {
		if f.Path == "traffic.duration" && !strings.Contains(f.Doc, fmt.Sprintf("at most %gh", scenario.MaxDuration.Hours())) {
			t.Fatalf("traffic.duration's documentation %q does not state the cap %s", f.Doc, scenario.MaxDuration)
		}
	}
}
