// Package keyspace knows the Redis key layouts of rate limiters — rlctl's
// own algorithms and widely used libraries (envoyproxy/ratelimit,
// go-redis/redis_rate, Spring Cloud Gateway, Kong, ulule/limiter,
// rate-limit-redis, Upstash ratelimit) plus user-defined ones — and
// operates on them: inspect one identity's state in the schema's own terms,
// reset it, repair keys that lost their TTL, and audit a whole deployment.
//
// Everything scans with SCAN (never KEYS), on a Cluster every primary,
// pipelines its reads and keeps only counts and bounded samples, so memory
// stays constant however many keys a deployment holds.
package keyspace
