package design

// Fault actions, as scenario files name them and reports print them.
const (
	// FaultFailover replaces the gateways' Redis with a promoted replica
	// that had not caught up, at one instant.
	FaultFailover = "failover"
	// FaultRedisDown makes Redis stop answering.
	FaultRedisDown = "redis-down"
	// FaultRedisLatency delays every Redis call.
	FaultRedisLatency = "redis-latency"
	// FaultRedisReset deletes the run's limiter keys, at one instant.
	FaultRedisReset = "redis-reset"
	// FaultRedisStall pauses the deployment's Redis (CLIENT PAUSE) for a
	// while: every gateway feels one server-side stall.
	FaultRedisStall = "redis-stall"
	// FaultGatewayDown stops one simulated gateway.
	FaultGatewayDown = "gateway-down"
	// FaultKillPrimary kills the primary (SIGKILL) and lets the topology
	// elect a new one, at one instant.
	FaultKillPrimary = "kill-primary"
)

// Stall modes of redis-stall: what CLIENT PAUSE holds back.
const (
	StallWrite = "write"
	StallAll   = "all"
)

// MovesPrimary reports whether action hands the gateways over to another
// Redis server (a failover, a kill of the primary), which keeps a clock of
// its own.
func MovesPrimary(action string) bool {
	return action == FaultFailover || action == FaultKillPrimary
}

// InstantFault reports whether action happens at one moment (a failover,
// a kill, a reset) rather than lasting for a while.
func InstantFault(action string) bool {
	return action == FaultFailover || action == FaultKillPrimary || action == FaultRedisReset
}
