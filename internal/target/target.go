package target

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault/inject"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/traffic"
)

// Spec is what a kind builds a run's target from: the scenario's target
// section and the little of the rest it needs, never the whole scenario.
type Spec struct {
	// Name, File and Line place the scenario in messages.
	Name string
	File string
	Line int
	// Target is the scenario's target section.
	Target scenario.Target
	// Limit is the published limit.
	Limit rate.Limit
	// Identities is how many identities the traffic uses.
	Identities int
	// Faults is the fault plan, in the order of the file.
	Faults []scenario.Fault
	// Redis is the Redis the target's gateways use: --redis over the
	// file's target.redis.
	Redis string
	// RedisOptions carry TLS settings, the timeout and the environment.
	RedisOptions redisconn.Options
	// AllowFailover is --allow-failover: failover faults may promote a
	// replica of a Sentinel or Cluster rlctl did not start.
	AllowFailover bool
	// AllowFaults is --allow-faults: redis-stall, redis-reset, redis-down
	// and redis-latency may act on a deployment rlctl did not start (an
	// http target's own Redis, its Toxiproxy).
	AllowFaults bool
	// AllowScriptWrites is --allow-script-writes: a user's script that
	// touched more than its KEYS when watched runs anyway.
	AllowScriptWrites bool
	// Shared is set when the run is one of several to be merged: the target
	// then offers a reference clock every machine can read.
	Shared bool
}

// SpecOf narrows sc to what a kind builds from; redis is the Redis the
// caller chose (--redis over the file's).
func SpecOf(sc *scenario.Scenario, redis string) Spec {
	if redis == "" {
		redis = sc.Target.Redis
	}
	return Spec{
		Name: sc.Name, File: sc.File, Line: sc.Line, Target: sc.Target, Limit: sc.Limit,
		Identities: sc.Traffic.Identities, Faults: sc.Faults, Redis: redis,
	}
}

// FaultPlan is what the fault injector needs of s.
func (s Spec) FaultPlan() *inject.Plan {
	return &inject.Plan{Name: s.Name, Kind: s.Target.Kind, Faults: s.Faults, Replicate: s.Target.Replicate, ClockSkew: s.Target.ClockSkew}
}

// Errorf is a usage error (exit 2) about s, prefixed with its name.
func (s Spec) Errorf(format string, args ...any) error {
	return exitcode.With(fmt.Errorf("%s: "+format, append([]any{s.Name}, args...)...), exitcode.Usage)
}

// Kind is one target kind, as a scenario's target.kind names it.
type Kind struct {
	// Name is the scenario's target.kind.
	Name string
	// Section is the kind's part of the scenario format: its own target
	// fields, their defaults, rules and help. Register registers it with
	// package scenario under Name.
	Section scenario.Section
	// Build builds the run's target. On error nothing it started is left
	// running.
	Build func(ctx context.Context, s Spec) (*Built, error)
}

// Remote reports whether the limit lives outside rlctl (real gateways):
// machines of a shared run then share it, and may split the requests.
func (k Kind) Remote() bool { return k.Section.Remote }

var (
	mu    sync.RWMutex
	kinds = map[string]Kind{}
)

// Register makes a kind known; kinds register themselves in init. A second
// kind of one name is a programming error.
func Register(k Kind) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := kinds[k.Name]; dup || k.Name == "" || k.Build == nil {
		panic(fmt.Sprintf("target: kind %q registered twice or incomplete", k.Name))
	}
	k.Section.Kind = k.Name
	kinds[k.Name] = k
	scenario.RegisterSection(k.Section)
}

// Lookup returns the kind named name.
func Lookup(name string) (Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Names lists the registered kinds, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Build builds s's target with the kind it names.
func Build(ctx context.Context, s Spec) (*Built, error) {
	k, ok := Lookup(s.Target.Kind)
	if !ok {
		return nil, exitcode.With(fmt.Errorf("%s: target kind %q is not built into this rlctl (it knows %v)", s.Name, s.Target.Kind, Names()), exitcode.Usage)
	}
	return k.Build(ctx, s)
}

// Built is a run's target and what comes with it.
type Built struct {
	// Target is what the traffic is sent to.
	Target traffic.Target
	// Grace is the longest one request may take (an http request's
	// request_timeout): the run waits that long for its last answers.
	Grace time.Duration
	// Hooks carry out the scenario's faults on the run's clock.
	Hooks []traffic.Hook
	// Notes say how the target was set up (namespaces, probes, how each
	// fault is carried out).
	Notes []string
	// Embedded is set when the target's Redis is the embedded one.
	Embedded bool
	// Clock is the reference a shared run's machines read their clocks
	// against; nil when the target has none.
	Clock *Clock
	// Redis is the Redis of gateways rlctl runs (nil: none), for reading
	// back what it recorded after the run.
	Redis *redisconn.Config
	// IdentityNames, when set, name the identities as the target's own logs
	// do (their source addresses).
	IdentityNames []string

	closers   []func() error
	finishers []func(ctx context.Context, h *history.History, f *Finished)
}

// Finished is what a target knows once the traffic is over.
type Finished struct {
	// Notes add to the run's notes.
	Notes []string
	// Extra are figures measured outside the decisions (stranded leases,
	// counts lost across a failover).
	Extra map[string]float64
	// CountsLostByIdentity is counts_lost identity by identity.
	CountsLostByIdentity map[string]float64
	// Stuck says what the target could not stop ("" when nothing).
	Stuck string
	// Unapplied names the planned faults that could not be carried out,
	// and why.
	Unapplied []string
}

// Defer runs fn when the target is closed, last deferred first.
func (b *Built) Defer(fn func() error) { b.closers = append(b.closers, fn) }

// OnFinish runs fn once the traffic is over, in the order added: it reads
// what only the target's own stage can (its Redis, its gateways, its
// faults' elections) and records it in h's metadata or in f.
func (b *Built) OnFinish(fn func(ctx context.Context, h *history.History, f *Finished)) {
	b.finishers = append(b.finishers, fn)
}

// Finish gathers what the target knows once the traffic that made h is
// over.
func (b *Built) Finish(ctx context.Context, h *history.History) Finished {
	var f Finished
	for _, fn := range b.finishers {
		fn(ctx, h, &f)
	}
	return f
}

// Close stops what Build started, last first.
func (b *Built) Close() error {
	if b == nil {
		return nil
	}
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
	return nil
}

// Closing returns a function for a kind's Build to defer: unless ok is
// set when it runs, it closes b (a build that failed half way).
func (b *Built) Closing(ok *bool) func() {
	return func() {
		if !*ok {
			b.Close()
		}
	}
}
