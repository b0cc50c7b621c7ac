package design

import (
	"fmt"
	"time"
)

// Design is everything rlctl knows about one limiter design, for every
// package that reads designs: one file of this package declares it, and
// the list in registry.go registers it. A switch on a design's name
// elsewhere is a property missing here.
type Design struct {
	// Name is the contract scenario files write (target.algorithm).
	Name string
	// Summary is the line `rlctl help scenarios` prints for the name.
	Summary string
	// State says where the design keeps what it counts.
	State State
	// Clock says whose clock decides its window.
	Clock Clock
	// Keys is its key schema in Redis; zero for a design whose state is
	// all in the gateways' memory.
	Keys Keys
	// Theory is its worst case for one identity (`rlctl ceiling`), for
	// valid Params. ceiling fills in what every design shares (its name,
	// the failure policy's answer, the ratio).
	Theory func(p Params) Theory
	// Envelope is the token-bucket burst (requests) a correct limiter of
	// this design obeys, refilled at the published rate: what it admits
	// beyond that counts as slipped.
	Envelope func(p Params) float64
	// Span, when set, is the most it admits in a span shorter than the
	// window (t is its Theory for p); nil means the window's ceiling,
	// for designs that admit their worst at one instant.
	Span func(p Params, t Theory, span time.Duration) float64
	// Counter says how counts_lost reads its counters after a failover.
	Counter Counter
	// Accepts lists the scenario options that apply to it beyond those
	// every design takes; the others are refused at load.
	Accepts Options
	// Note is the note a report adds on what its figures mean, if any.
	Note Note
}

// State is where a design keeps its state.
type State int

// The states. The zero State is unset, which the registry test refuses.
const (
	_ State = iota
	// StateLocal: each gateway's memory; no Redis on the decision path.
	StateLocal
	// StateRedis: Redis decides every request.
	StateRedis
	// StateLease: Redis holds a budget each gateway leases a slice of and
	// spends locally; a gateway that dies strands its slice.
	StateLease
)

// Clock says whose clock decides a design's window.
type Clock struct {
	// Fixed is the only clock that can decide, whatever target.clock
	// says: the gateway's own for state in its memory, Redis's for a
	// window that is a key's expiry. Empty for a design that reads the
	// clock target.clock names (passed to its script, or Redis TIME).
	Fixed string
	// Default is the clock read when target.clock names none, for a
	// design that reads the one it names.
	Default string
}

// Reads reports whether target.clock decides which clock the design
// reads.
func (c Clock) Reads() bool { return c.Fixed == "" }

// Of is whose clock decides the window when target.clock is chosen ("" =
// none named).
func (c Clock) Of(chosen string) string {
	switch {
	case c.Fixed != "":
		return c.Fixed
	case chosen != "":
		return chosen
	}
	return c.Default
}

// Counter is how counts_lost reads a design's counters: every key of its
// key schema, each holding a count.
type Counter int

// The counter readers. The zero Counter is unset, which the registry test
// refuses.
const (
	_ Counter = iota
	// NoCounter: the state is not a count of admissions (a gateway's
	// memory, a bucket, a TAT, a leased budget), so nothing is read.
	NoCounter
	// StringCounter: each key is an integer count (a Redis string).
	StringCounter
	// LogCounter: each key is a sorted set with one member per admission,
	// scored by its time in ms.
	LogCounter
)

// Options are the scenario options a design may accept; each is refused
// on the designs that do not. (clock: redis and requires: cluster are
// refused by StateLocal.)
type Options struct {
	// Lease: target.lease, the slice a gateway leases.
	Lease bool
	// Pause: target.pause, the gap between a read and its write.
	Pause bool
	// Replicate: target.replicate, WAIT after each decision's one write.
	Replicate bool
}

// Note is the kind of note a report adds on a design's figures.
type Note int

// The notes.
const (
	// NoNote: its figures need no words of their own.
	NoNote Note = iota
	// NoteBucket: a bucket's envelope (capacity plus refill) is its
	// promise, not a window count: the figures are read against it.
	NoteBucket
	// NoteTTLRefresh: the expiry is refreshed on every request, so the
	// window never rolls under continuous traffic.
	NoteTTLRefresh
)

// Lookup returns the design named name.
func Lookup(name string) (*Design, bool) {
	d, ok := byName[name]
	return d, ok
}

// Of is the design named name, or the zero Design when none is (an http
// or redis-script target, an unknown name reported on its own): every
// option then reads as refused and its state as unknown.
func Of(name string) Design {
	if d, ok := byName[name]; ok {
		return *d
	}
	return Design{}
}

// MustLookup is Lookup for a name known to be registered (a constant of
// this package); it panics on another.
func MustLookup(name string) *Design {
	d, ok := byName[name]
	if !ok {
		panic(fmt.Sprintf("design %q is not registered", name))
	}
	return d
}

// All returns every design, in the order of DESIGN.md.
func All() []*Design { return append([]*Design(nil), all...) }

// Names returns every design's name, in the order of DESIGN.md.
func Names() []string {
	out := make([]string, len(all))
	for i, d := range all {
		out[i] = d.Name
	}
	return out
}

var byName = func() map[string]*Design {
	m := make(map[string]*Design, len(all))
	for _, d := range all {
		m[d.Name] = d
	}
	return m
}()

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
	// FailoverCheckEvery is how often a gateway that denies after a
	// failover reads the failover marker while requests arrive.
	FailoverCheckEvery = 50 * time.Millisecond
	// DefaultRefillBelow is the share of a lease slice below which a
	// leasing gateway tops up.
	DefaultRefillBelow = 0.2
)
