package limiter

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/design"
)

// Clock sources for Config.Clock (see package design).
const (
	ClockGateway = design.ClockGateway
	ClockRedis   = design.ClockRedis
)

// ErrUnknownAlgorithm is returned by New for a name package design does
// not register, or one no file of this package builds.
var ErrUnknownAlgorithm = errors.New("unknown algorithm")

// constructor builds one design for one gateway from a valid Config;
// client is nil only for a design whose state is in memory, clock never
// nil.
type constructor func(cfg Config, client redis.UniversalClient, clock Clock) (Limiter, error)

// constructors holds each design's constructor by name; each design's
// file registers its own.
var constructors = map[string]constructor{}

// register records name's constructor; a name registered twice is a bug
// caught at start.
func register(name string, c constructor) {
	if _, dup := constructors[name]; dup {
		panic("limiter: design " + name + " registered twice")
	}
	constructors[name] = c
}

// EffectiveClock is whose clock decides cfg's window (see design.Clock):
// Config.Clock, or when empty the design's natural default — Redis TIME
// for GCRA (as go-redis/redis_rate does) and leasing (one clock for the
// global budget), the gateway's clock for the others; Redis's for the
// windows that are a key's expiry, and the gateway's for state in its
// memory, whatever Config.Clock says.
func (cfg Config) EffectiveClock() string {
	if d, ok := design.Lookup(cfg.Algorithm); ok {
		return d.Clock.Of(cfg.Clock)
	}
	return cfg.Clock
}

// IsLocal reports whether an algorithm keeps all its state in the gateway's
// memory (it needs no Redis).
func IsLocal(algorithm string) bool {
	d, ok := design.Lookup(algorithm)
	return ok && d.State == design.StateLocal
}

// Validate checks cfg without building anything: a known algorithm, a
// positive limit whose window is a whole number of milliseconds (the
// scripts count in ms), a known clock, sane capacity and lease settings.
func (cfg Config) Validate() error {
	if _, ok := design.Lookup(cfg.Algorithm); !ok || constructors[cfg.Algorithm] == nil {
		return fmt.Errorf("%w %q (want one of %s)", ErrUnknownAlgorithm, cfg.Algorithm, strings.Join(design.Names(), ", "))
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
	if client == nil && !IsLocal(cfg.Algorithm) {
		return nil, fmt.Errorf("%s needs a Redis client", cfg.Algorithm)
	}
	return constructors[cfg.Algorithm](cfg, client, clock)
}

// capacityOf is a bucket's (or GCRA's) burst: Capacity, or the limit.
func capacityOf(cfg Config) int64 {
	if cfg.Capacity > 0 {
		return cfg.Capacity
	}
	return cfg.Limit.Count
}
