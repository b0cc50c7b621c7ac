package scenario

import (
	"testing"

	"github.com/rlctl/rlctl/internal/design"
)

// A failover or a kill of the primary hands the gateways over to another
// Redis server; the other faults keep the one they had.
func TestMovesPrimary(t *testing.T) {
	for action, want := range map[string]bool{
		design.FaultFailover: true, design.FaultKillPrimary: true,
		design.FaultRedisDown: false, design.FaultRedisReset: false, design.FaultRedisStall: false,
	} {
		sc := &Scenario{Faults: []Fault{{Action: design.FaultRedisLatency}, {Action: action}}}
		if got := sc.MovesPrimary(); got != want {
			t.Errorf("%s: MovesPrimary %v, want %v", action, got, want)
		}
	}
	if (&Scenario{}).MovesPrimary() {
		t.Error("no fault: MovesPrimary")
	}
}
