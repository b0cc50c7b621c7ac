package fault

// Fault actions, as scenario files name them and reports print them.
const (
	// Failover replaces the gateways' Redis with a promoted replica that
	// had not caught up, at one instant.
	Failover = "failover"
	// RedisDown makes Redis stop answering.
	RedisDown = "redis-down"
	// RedisLatency delays every Redis call.
	RedisLatency = "redis-latency"
	// RedisReset deletes the run's limiter keys, at one instant.
	RedisReset = "redis-reset"
	// GatewayDown stops one simulated gateway.
	GatewayDown = "gateway-down"
	// KillPrimary kills the primary (SIGKILL) and lets the topology elect a
	// new one, at one instant.
	KillPrimary = "kill-primary"
)

// Instant reports whether action happens at one moment (a failover, a
// kill, a reset) rather than lasting for a while.
func Instant(action string) bool {
	return action == Failover || action == KillPrimary || action == RedisReset
}
