// Package redisconn turns a Redis URL into a go-redis UniversalClient
// (standalone, Sentinel or Cluster, with TLS and ACL users), redacts every
// URL that reaches output, and provides the two Redis servers rlctl can run
// itself: the embedded one (miniredis, whose clock and expiry it advances
// with real time) and spawned redis-server processes.
package redisconn
