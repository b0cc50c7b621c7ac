// Package redisconn turns a Redis URL into a go-redis UniversalClient
// (standalone, Sentinel or Cluster, with TLS and ACL users), redacts every
// URL that reaches output, and provides the two Redis servers rlctl can run
// itself: the embedded one (miniredis, whose clock and expiry it advances
// with real time) and spawned redis-server processes.
//
// The URL forms are listed at Target. In short:
//
//	redis://[user[:pass]@]host[:port][/db]
//	rediss://...                                   (TLS; --tls-ca/--tls-cert/--tls-key)
//	unix://[user[:pass]@]/path/redis.sock[?db=N]
//	redis+sentinel://[user[:pass]@]h1:26379,h2:26379/master[/db][?sentinel_password=...]
//	redis+cluster://[user[:pass]@]h1:7000,h2:7001
//
// A URL without a password takes it from REDISCLI_AUTH. Unknown options
// are errors.
//
// Typical use:
//
//	cfg, stop, err := redisconn.Open(ctx, spec, opts) // "embedded", "spawn" or a URL
//	defer stop()
//	client, err := cfg.Connect(ctx) // PING within the timeout, or an exit-3 error
//
// Errors that reach the user are one line naming the redacted URL and
// what failed (connection refused, authentication failed, TLS handshake
// failed, timed out, ...) and carry exitcode.Unreachable; a malformed URL
// carries exitcode.Usage. Passwords never appear in String or errors, and
// go-redis's own log lines are discarded.
//
// Spawn starts real redis-server processes (one server, a primary with
// replicas, a Sentinel set, a Cluster) on free loopback ports; each lives
// in its own process group with a parent-death signal, so it is stopped by
// Close, by cancelling the context given to Spawn, and by rlctl's death.
// Its directory (logs, and its credentials until it has read them) goes
// with Close, or, when rlctl is killed outright, with a reaper process
// that waits on the directory's owner lock.
// Open starts the named topologies ("spawn-sentinel", "spawn-cluster") the
// same way, and a Deployment carries what faults need: KillAddr,
// HoldReplication; a Config finds a deployment's shards (SentinelShard,
// ClusterShard) and reaches its nodes one by one (NodeClient).
package redisconn
