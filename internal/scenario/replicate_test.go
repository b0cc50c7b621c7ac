package scenario_test

import (
	"github.com/rlctl/rlctl/internal/scenario"
	"strings"
	"testing"
	"time"
)

// target.replicate loads onto the Lua designs with WAIT's timeout
// defaulted under the endpoint timeout, and is refused where it cannot
// work, naming the line.
func TestReplicateField(t *testing.T) {
	t.Parallel()
	scs, err := scenario.Parse([]byte(baseT+"  replicate: 1\n  timeout: 30ms\n"), "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tg := scs[0].Target; tg.Replicate != 1 || tg.ReplicateTimeout != 15*time.Millisecond || !strings.Contains(tg.String(), "replicate 1") {
		t.Errorf("replicate %d timeout %v (%s), want 1, half the 30ms timeout, said in the target", tg.Replicate, tg.ReplicateTimeout, tg.String())
	}
	for _, tc := range []struct{ yaml, want string }{
		{strings.Replace(baseT, "redis-fixed-window", "redis-get-incr", 1) + "  replicate: 1\n", "bad.yaml:7: target.replicate: applies to the simulated Lua designs only"},
		{baseT + "  replicate_timeout: 5ms\n", "bad.yaml:7: target.replicate_timeout: applies with replicate only"},
		{baseT + "  replicate: 1\n  replicate_timeout: 50ms\n", "target.endpoints[0].timeout: 50ms leaves WAIT (replicate_timeout 50ms) no time"},
		{baseT + "  replicate: 1\n  replicate_timeout: 1500us\n", "bad.yaml:8: target.replicate_timeout: want a whole number of milliseconds"},
		{baseT + "  replicate: 99\n", "bad.yaml:7: target.replicate: want an integer from 0 to 16"},
	} {
		_, err := scenario.Parse([]byte(tc.yaml), "bad.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
