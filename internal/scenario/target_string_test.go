package scenario_test

import (
	"github.com/rlctl/rlctl/internal/scenario"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
)

// A simulated target's description goes into every report: it names what
// was driven. (The http and redis-script kinds test their own.)
func TestTargetStringDescribesWithoutSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		t    scenario.Target
		want string
	}{
		{scenario.Target{Kind: scenario.KindSimulated, Algorithm: "redis-token-bucket", Gateways: 4, Clock: design.ClockGateway, ClockSkew: 300 * time.Millisecond},
			"simulated redis-token-bucket ×4, clock gateway, skew ±300ms"},
	}
	for _, tt := range tests {
		got := tt.t.String()
		if got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("password in %q", got)
		}
	}
}
