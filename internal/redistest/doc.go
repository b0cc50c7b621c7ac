// Package redistest starts real redis-server processes for tests: on free
// loopback ports, each in its own temporary directory, stopped (by pid) when
// the test ends, also when it fails, and killed by the kernel if the test
// binary dies first (they are spawned through redisconn.Spawn, with a
// parent-death signal). A missing redis-server fails the test with an
// instruction; it is never a skip.
//
// Start gives one server; StartReplica, StartCluster, StartSentinel,
// StartTLS and StartACL give the other deployments rlctl must handle.
//
// SeedForeign fills a Redis with another application's keys and returns
// their Snapshot; after running rlctl against that Redis,
// Snapshot.AssertUnchanged requires every one of them byte-identical with
// its TTL only counted down. TakeSnapshot does the same for any keys.
package redistest
