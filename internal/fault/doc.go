// Package fault injects the faults a scenario names between simulated
// gateways and Redis: a switch used as the dialer of the gateways' own
// Redis clients, on any topology, that cuts their connections (redis-down)
// or delays what they send (redis-latency); a TCP proxy on loopback in
// front of one standalone server that can be re-pointed at another
// (failover to a promoted replica that had not caught up); the hold that
// runs a lasting fault for its span; and the watch that times a real
// failover's election (WatchElection): when the old primary stopped taking
// writes, and when the gateways' writes landed on the new.
package fault
