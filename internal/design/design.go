package design

import "time"

// Algorithm names, in the order of DESIGN.md.
const (
	LocalFixedWindow        = "local-fixed-window"
	LocalTokenBucket        = "local-token-bucket"
	RedisGetIncr            = "redis-get-incr"
	RedisFixedWindow        = "redis-fixed-window"
	RedisFixedWindowRefresh = "redis-fixed-window-refresh"
	RedisClockWindow        = "redis-clock-window"
	RedisTokenBucket        = "redis-token-bucket"
	RedisSlidingWindow      = "redis-sliding-window"
	RedisSlidingLog         = "redis-sliding-log"
	RedisGCRA               = "redis-gcra"
	Leasing                 = "leasing"
)

// Algorithms lists every algorithm name, in the order of DESIGN.md.
var Algorithms = []string{
	LocalFixedWindow, LocalTokenBucket, RedisGetIncr, RedisFixedWindow,
	RedisFixedWindowRefresh, RedisClockWindow, RedisTokenBucket,
	RedisSlidingWindow, RedisSlidingLog, RedisGCRA, Leasing,
}

// Failure policies of an endpoint: what a gateway does when Redis fails
// (on_error) and after a detected failover (on_failover).
const (
	OnErrorOpen     = "open"   // admit, By=fail-open
	OnErrorClosed   = "closed" // deny, By=fail-closed
	OnErrorLocal    = "local"  // a smaller per-gateway allowance, By=fallback
	OnFailoverTrust = "trust"  // carry on with whatever the new primary holds
	OnFailoverDeny  = "deny"   // deny for one window after a detected failover
)

// Clocks a design can read.
const (
	// ClockGateway: the gateway's own clock (possibly skewed) is passed to
	// the script as ARGV.
	ClockGateway = "gateway"
	// ClockRedis: the script reads Redis TIME, one clock for everyone.
	ClockRedis = "redis"
)

// What a scenario shows (its shows field): a flaw the design has, or that
// the design holds. A pass means "flaw demonstrated" for the first and
// "design holds" for the second, so reports never present a leak they
// proved as a design that is fine.
const (
	ShowsFlaw  = "flaw"
	ShowsHolds = "holds"
)

// Defaults of a design's settings, shared by the scenario files that
// leave them out and the limiter that runs them.
const (
	// DefaultPrefix starts every key rlctl's own designs write.
	DefaultPrefix = "rl:"
	// DefaultTimeout bounds one Redis call of a gateway's failure policy.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultRefillBelow is the share of a lease slice below which a
	// leasing gateway tops up.
	DefaultRefillBelow = 0.2
)
