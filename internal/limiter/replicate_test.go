package limiter

import (
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

// replicate is checked where it is configured: only the Lua designs have
// one write per decision to wait for, and WAIT counts whole milliseconds.
func TestReplicateValidation(t *testing.T) {
	t.Parallel()
	limit := rate.Limit{Count: 10, Window: time.Second}
	for _, tc := range []struct {
		cfg  Config
		want string // "" = valid
	}{
		{Config{Algorithm: design.RedisFixedWindow, Limit: limit, Replicate: 1}, ""},
		{Config{Algorithm: design.RedisGCRA, Limit: limit, Replicate: 2, ReplicateTimeout: 5 * time.Millisecond}, ""},
		{Config{Algorithm: design.RedisGetIncr, Limit: limit, Replicate: 1}, "Lua designs"},
		{Config{Algorithm: design.Leasing, Limit: limit, Replicate: 1}, "Lua designs"},
		{Config{Algorithm: design.LocalFixedWindow, Limit: limit, Replicate: 1}, "Lua designs"},
		{Config{Algorithm: design.RedisFixedWindow, Limit: limit, Replicate: -1}, "negative"},
		{Config{Algorithm: design.RedisFixedWindow, Limit: limit, Replicate: 1, ReplicateTimeout: 1500 * time.Microsecond}, "whole number"},
	} {
		err := tc.cfg.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s replicate %d timeout %v: %v, want %q", tc.cfg.Algorithm, tc.cfg.Replicate, tc.cfg.ReplicateTimeout, err, tc.want)
		}
	}
}
