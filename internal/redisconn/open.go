package redisconn

import (
	"context"
	"strings"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// Special values of a redis spec (the --redis flag, a scenario's redis:).
const (
	// SpecEmbedded runs the in-process Redis (see Embedded).
	SpecEmbedded = "embedded"
	// SpecSpawn starts one real redis-server from PATH (see Spawn).
	SpecSpawn = "spawn"
	// SpecSpawnSentinel starts a primary, one replica and three Sentinels;
	// clients connect through the Sentinels.
	SpecSpawnSentinel = "spawn-sentinel"
	// SpecSpawnCluster starts a Cluster of three primaries, each with one
	// replica.
	SpecSpawnCluster = "spawn-cluster"
)

// spawnSpecs are the deployments each spawn spec starts.
var spawnSpecs = map[string]SpawnOptions{
	SpecSpawn:         {},
	SpecSpawnSentinel: {Replicas: 1, Sentinels: 3},
	SpecSpawnCluster:  {Cluster: true, Masters: 3, ClusterReplicas: 1},
}

// Open resolves a redis spec: "embedded" starts the in-process server,
// "spawn" a real redis-server on a free port, "spawn-sentinel" and
// "spawn-cluster" the topologies their constants describe, anything else is parsed as a
// URL (opts.URL is ignored; the TLS settings, timeout and Getenv apply).
// The returned stop function stops what Open started (a no-op for a URL)
// and is never nil when err is nil. A bad URL carries exitcode.Usage; a
// server that cannot be started carries exitcode.Unreachable.
func Open(ctx context.Context, spec string, opts Options) (*Config, func() error, error) {
	noop := func() error { return nil }
	switch strings.TrimSpace(spec) {
	case SpecEmbedded:
		e, err := StartEmbedded(ctx)
		if err != nil {
			return nil, nil, exitcode.With(err, exitcode.Unreachable)
		}
		opts.URL = e.URL()
		c, err := Parse(opts)
		if err != nil {
			e.Close()
			return nil, nil, err
		}
		c.label = SpecEmbedded
		return c, e.Close, nil
	case SpecSpawn, SpecSpawnSentinel, SpecSpawnCluster:
		spec = strings.TrimSpace(spec)
		return OpenSpawn(ctx, spec, spawnSpecs[spec], opts)
	default:
		opts.URL = spec
		c, err := Parse(opts)
		if err != nil {
			return nil, nil, err
		}
		return c, noop, nil
	}
}

// OpenSpawn starts the deployment so describes and returns a Config for
// its URL, labelled name in messages, and the function that stops it.
func OpenSpawn(ctx context.Context, name string, so SpawnOptions, opts Options) (*Config, func() error, error) {
	d, err := Spawn(ctx, so)
	if err != nil {
		// No Redis to talk to: the same outcome as one that is down.
		return nil, nil, exitcode.With(err, exitcode.Unreachable)
	}
	opts.URL = d.URL()
	c, err := Parse(opts)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	c.label = name + " (" + d.Servers[0].Addr + ")"
	c.spawned = d
	return c, d.Close, nil
}

// Deployment is the deployment Open spawned for c (spawn, spawn-sentinel,
// spawn-cluster), nil otherwise: what faults act on.
func (c *Config) Deployment() *Deployment { return c.spawned }

// IsSpawnSpec reports whether spec makes Open start real redis-server
// processes.
func IsSpawnSpec(spec string) bool {
	_, ok := spawnSpecs[strings.TrimSpace(spec)]
	return ok
}

// IsEmbedded reports whether c points at the embedded server started by
// Open.
func (c *Config) IsEmbedded() bool { return c.label == SpecEmbedded }

// IsShared reports whether spec names a Redis rlctl does not start (a URL:
// staging, production), where a run must write and delete only keys of its
// own.
func IsShared(spec string) bool {
	return spec != SpecEmbedded && !IsSpawnSpec(spec)
}

// OpenChecked is Open followed by one round trip that proves the server
// answers (Config.Check). With replicas > 0, "spawn" starts a primary with
// that many replicas (a real failover's).
func OpenChecked(ctx context.Context, spec string, opts Options, replicas int) (*Config, func() error, error) {
	var cfg *Config
	var stop func() error
	var err error
	if replicas > 0 && strings.TrimSpace(spec) == SpecSpawn {
		cfg, stop, err = OpenSpawn(ctx, SpecSpawn, SpawnOptions{Replicas: replicas}, opts)
	} else {
		cfg, stop, err = Open(ctx, spec, opts)
	}
	if err != nil {
		return nil, nil, err
	}
	c := cfg.NewClient()
	defer c.Close()
	if err := cfg.Check(ctx, c); err != nil {
		stop()
		return nil, nil, err
	}
	return cfg, stop, nil
}
