// Package analysis measures what a limiter really did, from a history alone:
// ceiling bounds over sliding windows, the token-bucket envelope (burst and
// sustained rate), boundary bursts, race excess, slipped requests, fault
// figures and latency percentiles. It is pure computation: no Redis, no
// network, no clocks.
package analysis
