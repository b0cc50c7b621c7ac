package limiter

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
)

// Clock sources for Config.Clock.
const (
	// ClockGateway: the gateway's own clock (possibly skewed) is passed to
	// the script as ARGV.
	ClockGateway = "gateway"
	// ClockRedis: the script reads Redis TIME, one clock for everyone.
	ClockRedis = "redis"
)

// ErrUnknownAlgorithm is returned by New for a name not in Algorithms.
var ErrUnknownAlgorithm = errors.New("unknown algorithm")

// EffectiveClock is the clock a design reads: Config.Clock, or when empty
// the design's natural default — Redis TIME for redis-gcra (as
// go-redis/redis_rate does) and leasing (one clock for the global budget),
// the gateway's clock for the others. Designs that keep no clock (the TTL
// windows, get-incr) ignore it.
func (cfg Config) EffectiveClock() string {
	if cfg.Clock != "" {
		return cfg.Clock
	}
	switch cfg.Algorithm {
	case RedisGCRA, Leasing:
		return ClockRedis
	}
	return ClockGateway
}

// IsLocal reports whether an algorithm keeps all its state in the gateway's
// memory (it needs no Redis).
func IsLocal(algorithm string) bool {
	return algorithm == LocalFixedWindow || algorithm == LocalTokenBucket
}

// Validate checks cfg without building anything: a known algorithm, a
// positive limit whose window is a whole number of milliseconds (the
// scripts count in ms), a known clock, sane capacity and lease settings.
func (cfg Config) Validate() error {
	if !slices.Contains(Algorithms, cfg.Algorithm) {
		return fmt.Errorf("%w %q (want one of %v)", ErrUnknownAlgorithm, cfg.Algorithm, Algorithms)
	}
	if cfg.Limit.Count <= 0 || cfg.Limit.Window <= 0 {
		return fmt.Errorf("%s: limit %v must be a positive count per positive window", cfg.Algorithm, cfg.Limit)
	}
	if cfg.Limit.Window%time.Millisecond != 0 {
		return fmt.Errorf("%s: window %v must be a whole number of milliseconds", cfg.Algorithm, cfg.Limit.Window)
	}
	switch cfg.Clock {
	case "", ClockGateway:
	case ClockRedis:
		if IsLocal(cfg.Algorithm) {
			return fmt.Errorf("%s keeps no state in Redis: clock: redis does not apply", cfg.Algorithm)
		}
	default:
		return fmt.Errorf("%s: clock %q (want gateway or redis)", cfg.Algorithm, cfg.Clock)
	}
	if cfg.Capacity < 0 {
		return fmt.Errorf("%s: capacity %d must not be negative", cfg.Algorithm, cfg.Capacity)
	}
	if cfg.Pause < 0 {
		return fmt.Errorf("%s: pause %v must not be negative", cfg.Algorithm, cfg.Pause)
	}
	if err := cfg.validateReplicate(); err != nil {
		return err
	}
	if l := cfg.Lease; l.Size < 0 || l.RefillBelow < 0 || l.RefillBelow >= 1 {
		return fmt.Errorf("%s: lease size %d must be >= 0 and refill_below %v in [0, 1)", cfg.Algorithm, l.Size, l.RefillBelow)
	}
	return nil
}

// New builds the limiter cfg names. client is the gateway's Redis client
// (nil for the local designs); clock is the gateway's clock (nil means
// time.Now). It fails for an unknown algorithm or a bad config.
//
// The leasing design returns a *Lease (it has Close and Stats); the others
// hold no goroutines.
func New(cfg Config, client redis.UniversalClient, clock Clock) (Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clock == nil {
		clock = time.Now
	}
	switch cfg.Algorithm {
	case LocalFixedWindow:
		return newLocalFixedWindow(cfg.Limit, clock, decision.ByLocal), nil
	case LocalTokenBucket:
		return newLocalTokenBucket(cfg.Limit, capacityOf(cfg), clock), nil
	}
	if client == nil {
		return nil, fmt.Errorf("%s needs a Redis client", cfg.Algorithm)
	}
	switch cfg.Algorithm {
	case RedisGetIncr:
		return newGetIncr(cfg, client), nil
	case Leasing:
		return newLease(cfg, client, clock), nil
	}
	return newScriptLimiter(cfg, client, clock)
}

// capacityOf is a bucket's (or GCRA's) burst: Capacity, or the limit.
func capacityOf(cfg Config) int64 {
	if cfg.Capacity > 0 {
		return cfg.Capacity
	}
	return cfg.Limit.Count
}
