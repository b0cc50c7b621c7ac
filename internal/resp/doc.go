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
// Why not go-redis there: with 50 simulated gateways on a machine of two
// cores, the go-redis command objects, argument boxing and pool machinery
// took most of rlctl's CPU, which the Redis server under test then lacked,
// so rlctl measured itself instead of Redis. go-redis stays the client for
// everything else (Cluster routing, Sentinel discovery, the operating
// commands); a Pool borrows a go-redis client's options, including its
// dialer, so TLS, ACL users, databases and Sentinel-resolved primaries
// behave the same.
package resp
