// Package keyspace knows the Redis key layouts of rate limiters — rlctl's
// own algorithms and widely used libraries (envoyproxy/ratelimit,
// go-redis/redis_rate, Spring Cloud Gateway, Kong, ulule/limiter,
// rate-limit-redis, Upstash ratelimit) plus user-defined ones — and
// operates on them: inspect one identity's state in the schema's own terms,
// reset it, repair keys that lost their TTL, audit a whole deployment, and
// read what each of a run's identities has used (ReadCounts, read-only).
//
// A key is changed (repair-ttl's TTL, reset's delete) only when a layout
// claims its name and type and its value is what that layout writes,
// checked on the server in the same script that changes it: a limiter-like
// name alone never makes another application's key a limiter's.
//
// Everything scans with SCAN (never KEYS), on a Cluster every primary,
// pipelines its reads and keeps only counts and bounded samples, so memory
// stays constant however many keys a deployment holds.
package keyspace
