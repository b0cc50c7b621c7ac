// Package limiter holds every rate-limiter design rlctl can run and measure,
// including the broken ones on purpose: local counters, GET-then-INCR, the
// Lua designs (fixed window, TTL-refresh bug, clock-keyed window, token
// bucket, sliding window counter, sliding log, GCRA) and leasing; plus the
// failure policies (on_error, on_failover) that wrap a Redis design.
//
// Lua lives in .lua files embedded with go:embed and runs with EVALSHA.
// limiter knows nothing of traffic, histories or reports.
package limiter
