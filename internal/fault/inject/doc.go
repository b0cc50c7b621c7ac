// Package inject turns a scenario's faults into hooks on the run's clock,
// acting on the deployment the run's gateways use: a fault switch under
// the gateways' own clients (redis-down, redis-latency, on every
// topology), a fault proxy in front of a standalone Redis (a staged
// failover), a real promotion on a primary with replicas rlctl started, a Sentinel or
// Cluster failover, redis-reset of the run's own keys. It also carries out
// target.replicate (WAIT for real, or emulated where there are no
// replicas), reads counts_lost across a failover, and records what each
// election looked like into the run's history. verify calls New once per
// run; the fault package below holds the mechanisms (proxy, election
// watch, switch) that know nothing of scenarios.
package inject
