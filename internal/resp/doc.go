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
// cores, a client's CPU is CPU the Redis server under test lacks, so rlctl
// would measure itself instead of Redis. make bench compares the clients
// on one decision's EVALSHA (scripts/clientbench, median of five rounds,
// 50 gateways with a client each as the simulated target runs; two runs
// on a machine shared with other work): go-redis costs 1.20× and 1.31×
// resp's CPU per decision. github.com/redis/rueidis v1.0.79 does not:
// without auto-pipelining it measured 0.93× and 1.05×, with it 1.14× and
// 1.13×; about two thirds of every client's CPU here is the kernel's send
// and receive. By the rule of issue #28 (keep a hand-written client only
// where the library is more than 10% worse) resp is due to be replaced by
// rueidis; that switch takes the limiter's decision path, the fault
// switch's dialer, the pipelined WAIT and the rule that a request which
// may have reached the server is never sent again, and is left to its own
// change. go-redis stays the client for
// everything else (Cluster routing, Sentinel discovery, the operating
// commands); a Pool borrows a go-redis client's options, including its
// dialer, so TLS, ACL users, databases and Sentinel-resolved primaries
// behave the same.
package resp
