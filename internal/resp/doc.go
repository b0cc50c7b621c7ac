// Package resp is a small RESP2 client for the decision hot path: one
// EVALSHA per decision, written into a per-connection buffer and answered
// into a caller's []int64, with no allocation per call (EvalInts). Every
// design on a single server decides through it, so all are measured
// through one client: users' own scripts with any reply (Eval), and
// redis-get-incr's plain commands, several per write (Do). Warm opens a
// pool's connections before a run. A connection the server closed is
// replaced before a request is sent on it; a request whose write failed
// before any byte went out is sent once more on another connection, and
// one that may have reached the server is never sent again.
//
// Why not go-redis or rueidis there: with 50 simulated gateways on a
// machine of two cores, a client's CPU is CPU the Redis server under test
// lacks, so rlctl would measure itself instead of Redis. Measured by make
// bench (scripts/clientbench, one decision's EVALSHA, 50 gateways with a
// client each, as the simulated target runs): resp 14.9 CPU µs per
// decision, rueidis v1.0.79 17.0 without auto-pipelining and 18.8 with it
// (14% and 27% more), go-redis 20.9 (40% more). rueidis with
// auto-pipelining is cheaper (10.2 against resp's 13.5) only when one
// client carries all 50 gateways' requests on one connection, which would
// no longer be 50 gateways. go-redis stays the client for
// everything else (Cluster routing, Sentinel discovery, the operating
// commands); a Pool borrows a go-redis client's options, including its
// dialer, so TLS, ACL users, databases and Sentinel-resolved primaries
// behave the same.
package resp
