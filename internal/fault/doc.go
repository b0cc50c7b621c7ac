// Package fault injects the faults a scenario names between simulated
// gateways and Redis: a TCP proxy on loopback that can refuse connections
// (redis-down), delay traffic (redis-latency) or be re-pointed at another
// server (failover to a promoted replica that had not caught up), plus the
// schedule that runs those actions at offsets of a run; and the watch that
// times a real failover's election (WatchElection): when the old primary
// stopped taking writes, and when the gateways' writes landed on the new.
package fault
