package verify

import (
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
)

// unmet says in one line why sc cannot mean anything on the Redis spec
// names, "" when it can: a scenario that requires a Redis Cluster is
// skipped up front anywhere else, not run to look like a pass.
func unmet(sc *scenario.Scenario, spec string) string {
	if sc.Requires != scenario.RequireCluster {
		return ""
	}
	spec = strings.TrimSpace(spec)
	if spec == redisconn.SpecSpawnCluster {
		return ""
	}
	if t, err := redisconn.ParseURL(spec); err == nil && t.Mode == redisconn.ModeCluster {
		return ""
	}
	if spec == "" {
		spec = redisconn.SpecEmbedded
	}
	return fmt.Sprintf("needs a Redis Cluster (this run's Redis is %s): run with --redis spawn-cluster", redisconn.Redact(spec))
}
