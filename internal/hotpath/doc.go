// Package hotpath is the decision hot path's Redis client: every design
// on a single server decides through it, so all are measured through one
// client — the designs' EVALSHA answered into a caller's []int64
// (EvalInts, EvalIntsWait with WAIT pipelined after it), users' own
// scripts with any reply (Eval), and redis-get-incr's plain commands,
// several per write (Do). Warm opens a pool's connections before a run.
//
// It is github.com/redis/rueidis with auto-pipelining, retries and
// client-side caching off, over RESP2 (see Pool.open for why each), and
// what rueidis does not do itself: a connection the server closed is
// found before a request is written on it and replaced; a request of which
// no byte went out is sent once more on another connection, and one that
// may have reached the server is never sent again; every call carries its
// own deadline, and waits for a free connection at most the pool timeout.
// A plain TCP connection's reads and writes are raw system calls (package
// rawsock), which spare the scheduler's bookkeeping on every decision,
// and a request is held until rueidis reads its answer and written by that
// read (rawsock's WriteThenRead), which spares the read that would find
// no answer yet.
//
// Why not go-redis there: with 50 simulated gateways on a machine of two
// cores, a client's CPU is CPU the Redis server under test lacks, so rlctl
// would measure itself instead of Redis. make bench compares the clients
// on one decision's EVALSHA (scripts/clientbench); go-redis cost 1.20× and
// 1.31× the CPU per decision of the hand-written RESP client rlctl had,
// and rueidis v1.0.79 without auto-pipelining 0.93× and 1.05×. By the rule
// of issue #28 (keep a hand-written client only where the library is more
// than 10% worse) the hand-written one went. go-redis stays the client for
// everything else (Cluster routing, Sentinel discovery, the operating
// commands); a Pool borrows a go-redis client's options, its dialer
// included, so TLS, ACL users, databases, Sentinel-resolved primaries and
// the fault switch's network faults behave the same.
package hotpath
