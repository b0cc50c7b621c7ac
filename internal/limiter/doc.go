// Package limiter holds every rate-limiter design rlctl can run and measure,
// including the broken ones on purpose: local counters, GET-then-INCR, the
// Lua designs (fixed window, TTL-refresh bug, clock-keyed window, token
// bucket, sliding window counter, sliding log, GCRA) and leasing; plus the
// failure policies (on_error, on_failover) that wrap a Redis design.
//
// New builds one design for one gateway: the gateway's Redis client (its
// own pool) and its clock, possibly skewed. Each design is one file here
// (its Lua in lua/, embedded by that file) that registers its constructor
// under the name package design gives it; what else is known of a design
// (its state, clock, key schema, theory) is package design's. limiter
// knows nothing of traffic, histories or reports.
//
// # Lua
//
// Each check-and-update is one script in lua/, embedded with go:embed and
// prefixed with a small shared prelude (now_of: the gateway's time passed
// as ARGV in µs, or Redis TIME). Scripts run with EVALSHA and fall back to
// EVAL on NOSCRIPT: one round trip, atomic. On a single server (or a
// Sentinel-resolved primary) the call goes through a hotpath.Pool built from
// the gateway's go-redis client (its dialer, TLS, credentials, database and
// timeouts): github.com/redis/rueidis with auto-pipelining, retries and
// client-side caching off, over RESP2. go-redis's per-call CPU would
// otherwise be taken from the server under test (scripts/clientbench
// measured it at 1.20× and 1.31× per decision of the hand-written client
// this replaced, rueidis without auto-pipelining at 0.93× and 1.05×, with
// it 1.14× and 1.13×); with retries off a decision that may have reached
// the server is never sent twice. On a Cluster the call goes through
// go-redis (Script.Run), which routes by slot. Every
// script answers {allowed, remaining, retry_ms, reset_ms, server_us}, with
// server_us -1 when the time came from the gateway; Decision.ServerTime is
// set from it. Scripts that read TIME before writing rely on effects
// replication (Redis 5 and later; the only mode since 7).
//
// Windowed designs (clock window, sliding window, leasing) get their base
// key rl:<tag>:{id} in KEYS and append the window index inside the script;
// the {id} hash tag keeps every key of an identity in one Cluster slot, so
// this is safe on Redis Cluster too. Each design's key schema (package
// design) is the layout; KeyPattern and Keys read it.
//
// # Clocks
//
// Config.Clock picks the clock a design reads: "gateway" (the caller's,
// skewable) or "redis" (TIME inside the script). Empty means the natural
// default (EffectiveClock): redis for redis-gcra and leasing, gateway for
// the rest. The TTL-based designs (fixed window, its refresh bug,
// get-incr) read no clock: Redis expiry ends their windows.
//
// # Failure policies
//
// WithPolicy bounds every call with a timeout (a goroutine per call stops
// waiting at the deadline unless the client honours context deadlines
// itself, see HonorsContext) and turns errors into decisions: on_error
// open (By=fail-open), closed (By=fail-closed) or local (a tenth of the
// limit per gateway, By=fallback). on_failover: deny reads a marker key
// (rl:marker) and the primaries' run ids in the background, at most every
// CheckEvery and only while requests arrive; a marker that vanished or
// changed, or a new run id, means the server is not the one the gateway
// started with, and the gateway denies for one window (By=failover-deny).
//
// # Replication
//
// Config.Replicate makes a Lua design's admission wait for replicas: WAIT
// N timeout is sent in the same write as the EVALSHA, on the same
// connection (WAIT cannot run inside a script, and on a Cluster it must
// reach the primary that ran the script), so it costs one round trip
// more inside Redis, not in the client. An admission fewer replicas
// acknowledged is ErrNotReplicated, for the endpoint's on_error to
// decide; a denial stands, since it needs no durable count.
//
// # Leased slices
//
// A Lease spends slices of a per-window budget in memory and tops up in
// the background; see Lease for the bound it promises and how it denies.
package limiter
