package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
)

// A target's description goes into every report: it names what was driven
// and never carries a password.
func TestTargetStringDescribesWithoutSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		t    Target
		want string
	}{
		{Target{Kind: KindSimulated, Algorithm: "redis-token-bucket", Gateways: 4, Clock: design.ClockGateway, ClockSkew: 300 * time.Millisecond},
			"simulated redis-token-bucket ×4, clock gateway, skew ±300ms"},
		{Target{Kind: KindHTTP, URLs: []string{"http://u:hunter2@127.0.0.1:8080/", "http://127.0.0.1:8081/"}},
			"http ×2 (http://u:xxxxx@127.0.0.1:8080/, http://127.0.0.1:8081/)"},
		{Target{Kind: KindHTTP, URLs: []string{"http://gw/v1?pin=1234&page=2&api_key={id}"}, ShowQuery: []string{"page"}},
			"http ×1 (http://gw/v1?pin=xxxxx&page=2&api_key={id})"},
		{Target{Kind: KindRedisScript, Script: "fw.lua", Gateways: 3}, "redis-script fw.lua ×3"},
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
