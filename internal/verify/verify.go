package verify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/ceiling"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault/inject"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/rundir"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/target/httptarget"
	"github.com/rlctl/rlctl/internal/target/scripttarget"
	"github.com/rlctl/rlctl/internal/target/simtarget"
	"github.com/rlctl/rlctl/internal/traffic"
	"github.com/rlctl/rlctl/internal/workload"
)

// Options are what the caller adds around a scenario.
type Options struct {
	// Redis, when set, replaces every scenario's target.redis (--redis).
	Redis string
	// RedisOptions carry TLS settings, the timeout and the environment for
	// URL targets.
	RedisOptions redisconn.Options
	// Progress is called with live traffic statistics.
	Progress func(traffic.Stats)
	// AllowFailover lets failover faults promote a replica of a Sentinel or
	// Cluster rlctl did not start (--allow-failover); without it such a
	// scenario is refused before it runs.
	AllowFailover bool
	// AllowScriptWrites runs a redis-script target on a Redis rlctl did not
	// start even when its script, watched first, touched more than its
	// KEYS (--allow-script-writes); the report then says rlctl cannot
	// vouch for keys outside the run's namespace.
	AllowScriptWrites bool
	// AfterRun, when set, is called with the run's Redis once the traffic
	// is over and before rlctl stops what it started, to read back what
	// Redis itself recorded.
	AfterRun func(ctx context.Context, redis *redisconn.Config)
	// Segment is this process's share of the scenario when several
	// processes run it at once (verify --segment); the zero Segment is
	// the whole.
	Segment workload.Segment
	// StartAt, when set, is the wall-clock instant the scenario's traffic
	// starts, the same on every machine of a shared run (verify
	// --start-at).
	StartAt time.Time
	// Now is the wall clock (time.Now when nil); tests skew it to play a
	// machine whose clock is off.
	Now func() time.Time
}

// shared reports whether the run is one of several to be merged: then each
// measures its clock against the shared reference.
func (o Options) shared() bool { return !o.Segment.IsWhole() || !o.StartAt.IsZero() }

// Outcome is one scenario's result.
type Outcome struct {
	Report report.Scenario
	// History is nil when the scenario could not start. A long run's has
	// spilled to disk: the caller closes it (RunSuite does).
	History *history.History
	// Saved is what re-scoring the history later needs.
	Saved rundir.Saved
	// Interrupted is set when ctx was cancelled mid-run: Report holds what
	// was measured until then.
	Interrupted bool
}

// Run runs one scenario. A scenario that cannot be set up (Redis
// unreachable, a bad script) comes back as an Outcome with status error
// and the error, so a suite can go on; the error carries its exit code.
func Run(ctx context.Context, sc *scenario.Scenario, o Options) (*Outcome, error) {
	out := &Outcome{Report: reportOf(sc)}
	if why := unmet(sc, redisSpec(sc, o)); why != "" {
		out.Report.Decide(score.Skip(why))
		return out, nil
	}
	fail := func(err error) (*Outcome, error) {
		out.Report.Decide(score.NotMeasuredBy(SavedOf(sc).Claim(), err))
		return out, err
	}
	env, err := build(ctx, sc, o)
	if err != nil {
		return fail(err)
	}
	defer env.close()
	out.Saved = SavedOf(sc)
	out.Saved.Notes = env.notes
	out.Saved.Embedded = env.embedded

	plan := planOf(sc)
	plan.Segment, plan.SegmentBy = o.Segment, sc.Traffic.Segment
	if !o.Segment.IsWhole() && plan.SegmentBy == traffic.SegmentByRequests && sc.Target.Kind != scenario.KindHTTP {
		// Each machine's simulated gateways would keep limits of their own.
		return fail(exitcode.With(fmt.Errorf("%s:%d: traffic.segment: requests needs an http target: the gateways rlctl simulates on each machine would not share one limit", sc.File, sc.Line), exitcode.Usage))
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	var atStart clockReading
	clockErr := errors.New("no reference clock to read: the target has no Redis and is not http")
	if o.shared() && env.clock != nil {
		atStart, clockErr = readClock(ctx, env.clock, now)
	}
	meta := history.Meta{Scenario: sc.Name, Limit: sc.Limit}
	for _, f := range sc.Faults {
		meta.Faults = append(meta.Faults, history.Fault{At: f.At, For: f.For, Planned: f.At, Action: f.Action})
	}
	var errs errorSample
	h, runErr := traffic.Run(ctx, env.target, plan, traffic.RunOptions{
		Meta: meta, Hooks: env.hooks, Progress: o.Progress, OnError: errs.add,
		StartAt: o.StartAt, Now: o.Now, Grace: graceOf(sc),
	})
	if runErr != nil && h == nil {
		if errors.Is(runErr, traffic.ErrInvalidPlan) {
			runErr = exitcode.With(fmt.Errorf("%s:%d: traffic: %w", sc.File, sc.Line, runErr), exitcode.Usage)
		}
		if errors.Is(runErr, traffic.ErrLate) {
			runErr = exitcode.With(fmt.Errorf("%s: %w", sc.Name, runErr), exitcode.Failed)
		}
		return fail(runErr)
	}
	if err := env.settleScript(&out.Saved); err != nil {
		out.Saved.Stuck = err.Error()
	}
	if o.shared() {
		if clockErr == nil {
			var atEnd clockReading
			if atEnd, clockErr = readClock(ctx, env.clock, now); clockErr == nil {
				h.Meta.Clock = combineClock(env.clock.name, atStart, atEnd)
			}
		}
		out.Saved.RunNotes = sharedNotes(h, o, clockErr)
	}
	out.History = h
	if env.shards != nil {
		h.Meta.Shards = env.shards.of(h.Meta.Identities)
	}
	out.Saved.Notes = append(out.Saved.Notes, env.faults.RecordElections(h)...)
	if o.AfterRun != nil && env.redis != nil {
		o.AfterRun(ctx, env.redis)
	}
	if runErr != nil {
		if ctx.Err() == nil {
			return fail(runErr)
		}
		out.Interrupted, out.Saved.Interrupted = true, true
	}
	out.Saved.Errors = errs.list()
	if d, ok := design.Lookup(sc.Target.Algorithm); ok && d.Keys.Value == design.ValueLog && env.redis != nil {
		out.Saved.Notes = append(out.Saved.Notes, logMemoryNote(ctx, env.redis, env.lc, sc, h.Meta.Identities)...)
	}
	if d, ok := design.Lookup(sc.Target.Algorithm); ok && env.set != nil && d.State == design.StateLease {
		out.Saved.Extra = map[string]float64{metric.StrandedLease: float64(env.set.Stats().LeaseStranded)}
	}
	out.Saved.Extra = env.faults.Extra(out.Saved.Extra)
	out.Saved.CountsLostByIdentity = env.faults.CountsLostByIdentity()
	r, err := rundir.Score(h, out.Saved)
	if err != nil {
		return fail(err)
	}
	out.Report = r
	if r.Status == score.StatusError {
		return out, exitcode.With(fmt.Errorf("%s: %s", sc.Name, r.Error), exitcode.Code(r.ExitCode))
	}
	return out, nil
}

// graceOf is how long a run's last requests may finish after its schedule
// ends: as long as one may take (an http request its request_timeout, a
// decision its Redis call's timeout), and at least traffic.DefaultGrace,
// so a slow answer still on its way is an answer, not an error of the
// run's own making.
func graceOf(sc *scenario.Scenario) time.Duration {
	g := max(traffic.DefaultGrace, sc.Target.RequestTimeout, sc.Target.Timeout)
	for _, ep := range sc.Target.Endpoints {
		g = max(g, ep.Timeout)
	}
	return g
}

// errorSample keeps the first few distinct errors a run's requests met.
type errorSample struct {
	mu   sync.Mutex
	msgs []string
}

const errorSampleSize = 3

func (s *errorSample) add(err error) {
	msg := err.Error()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.msgs) < errorSampleSize && !slices.Contains(s.msgs, msg) {
		s.msgs = append(s.msgs, msg)
	}
}

func (s *errorSample) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// redisSpec is the Redis a scenario's gateways use: --redis over the
// file's target.redis.
func redisSpec(sc *scenario.Scenario, o Options) string {
	if o.Redis != "" {
		return o.Redis
	}
	return sc.Target.Redis
}

// env is a built target and what must be stopped after the run.
type env struct {
	target  traffic.Target
	set     *gateway.Set
	redis   *redisconn.Config // the simulated gateways' Redis (nil: none)
	lc      limiter.Config    // the simulated gateways' design, namespaced
	clock   *clockRef         // the reference a shared run's clocks are read against
	hooks   []traffic.Hook
	closers []func() error
	notes   []string
	// faults are the scenario's faults set up on its Redis (nil: none).
	faults *inject.Faults
	// replicas is the primary with replicas started for target.replicate
	// on redis: spawn, or nil.
	replicas *redisconn.Deployment
	// shards names the shard of each identity's keys on a Cluster, nil
	// elsewhere (see readShards).
	shards *shardMap
	// embedded is set when the target's Redis is the embedded one.
	embedded bool
	// script is the redis-script target, settled after the traffic (see
	// settleScript); nil for the other kinds.
	script scripttarget.Settler
}

// namespace returns a key namespace of the run's own on a shared Redis,
// and "" on one rlctl started (embedded, spawn), where every key is the
// run's.
func (e *env) namespace(spec string) string {
	if !redisconn.IsShared(spec) {
		return ""
	}
	return newNamespace()
}

// own records the keys the run writes: on a shared Redis they are deleted
// once the run is over, and the report says where they were.
func (e *env) own(cfg *redisconn.Config, keys keyspace.Patterns, ns string) {
	if ns == "" {
		return
	}
	e.closers = append(e.closers, cleanup(cfg, keys))
	e.notes = append(e.notes, fmt.Sprintf("on the given Redis every key of this run lay in a namespace of its own (%s), deleted after the run: nothing else was written or deleted", strings.Join(keys, ", ")))
}

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// withFaults sets up sc's faults on the run's Redis (inject.New) and
// returns the client constructor the gateways must use.
func (e *env) withFaults(ctx context.Context, sc *scenario.Scenario, s inject.Setup) (func() redis.UniversalClient, error) {
	f, err := inject.New(ctx, sc, s)
	if err != nil {
		return nil, err
	}
	e.faults = f
	e.closers = append(e.closers, f.Close)
	e.hooks = append(e.hooks, f.Hooks...)
	e.notes = append(e.notes, f.Notes...)
	return f.NewClient, nil
}

func build(ctx context.Context, sc *scenario.Scenario, o Options) (*env, error) {
	e := &env{}
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	spec := redisSpec(sc, o)
	if err := inject.Refuse(sc, spec, o.AllowFailover); err != nil {
		return nil, err
	}
	e.embedded = sc.Target.Kind != scenario.KindHTTP && !limiter.IsLocal(sc.Target.Algorithm) && (spec == "" || spec == scenario.RedisEmbedded)
	switch sc.Target.Kind {
	case scenario.KindHTTP:
		if len(sc.Faults) > 0 {
			// rlctl cannot reach into real gateways or their Redis; a fault
			// it did not inject must not look like one that was survived.
			return nil, exitcode.With(fmt.Errorf("%s: faults need a target whose Redis rlctl controls (simulated or redis-script), not http", sc.Name), exitcode.Usage)
		}
		tlsConf, err := httpTLS(sc.Target.TLS)
		if err != nil {
			return nil, exitcode.With(fmt.Errorf("%s: http target: %w", sc.Name, err), exitcode.Usage)
		}
		var sources []netip.Addr
		var probeSrc netip.Addr
		if src := sc.Target.Identity.Source; src != "" {
			if sources, err = httptarget.SourceAddrs(src, sc.Traffic.Identities); err != nil {
				return nil, exitcode.With(fmt.Errorf("%s: http target: identity source: %w", sc.Name, err), exitcode.Usage)
			}
			// The probe leaves from the prefix's next address when there is
			// one: the machine's default could be an identity's.
			if more, err := httptarget.SourceAddrs(src, sc.Traffic.Identities+1); err == nil {
				probeSrc = more[len(more)-1]
			}
		}
		t, err := httptarget.New(httptarget.Options{
			URLs: sc.Target.URLs, Method: sc.Target.Method,
			IdentityHeader: sc.Target.Identity.Header, IdentityQuery: sc.Target.Identity.Query,
			Headers: sc.Target.Headers, Body: sc.Target.Body,
			DeniedStatus: sc.Target.DeniedStatus, Timeout: sc.Target.RequestTimeout, TLS: tlsConf,
			Sources: sources, ProbeSource: probeSrc, ShowQuery: sc.Target.ShowQuery,
		})
		if err != nil {
			return nil, exitcode.With(fmt.Errorf("%s: http target: %w", sc.Name, err), exitcode.Usage)
		}
		e.target = t
		e.closers = append(e.closers, t.Close)
		e.clock = httpClock(sc.Target, tlsConf)
		if o.shared() && spec != "" && redisconn.IsShared(spec) {
			// The gateways' Redis, when named, is the better reference:
			// TIME to the microsecond, read without writing anything.
			cfg, stop, err := openRedis(ctx, spec, o, false)
			if err != nil {
				return nil, err
			}
			e.closers = append(e.closers, stop)
			e.clock = redisClock(cfg)
		}
		if p, isProber := t.(traffic.Prober); isProber {
			if err := p.Probe(ctx); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, exitcode.With(fmt.Errorf("%s: http target unreachable before the run: %w", sc.Name, err), exitcode.Unreachable)
			}
			e.notes = append(e.notes, fmt.Sprintf("before the run, one request per URL (identity %s) checked that every gateway answers", httptarget.ProbeID))
		}
		ok = true
		return e, nil
	case scenario.KindRedisScript:
		cfg, stop, err := openRedis(ctx, spec, o, inject.NeedsReplica(sc))
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, stop)
		e.clock = redisClock(cfg)
		ns := e.namespace(spec)
		templates, keys, err := scriptKeys(sc.Target.Keys, ns)
		if err != nil {
			return nil, exitcode.With(fmt.Errorf("%s: redis-script target: %w", sc.Name, err), exitcode.Usage)
		}
		if err := e.guardScript(ctx, sc, o, cfg, templates, keys, ns); err != nil {
			return nil, err
		}
		e.readShards(ctx, sc, cfg, func(id string) (string, error) {
			return scripttarget.ExpandKey(templates[0], id, sc.Limit, time.Now())
		})
		newClient := cfg.NewClient
		if len(sc.Faults) > 0 {
			if newClient, err = e.withFaults(ctx, sc, inject.Setup{Spec: spec, Redis: cfg, Options: o.RedisOptions, Keys: keys, Prefix: ns}); err != nil {
				return nil, err
			}
		}
		t, err := scripttarget.New(ctx, scripttarget.Options{
			Source: sc.Target.ScriptSource, Gateways: sc.Target.Gateways,
			NewClient: newClient, Keys: templates, Args: sc.Target.Args,
			Allowed: sc.Target.Allowed, RetryAfter: sc.Target.RetryAfter, Limit: sc.Limit, Timeout: sc.Target.Timeout,
			Control: cfg.NewClient,
		})
		if err != nil {
			return nil, fmt.Errorf("%s: redis-script target: %w", sc.Name, err)
		}
		e.script = t.(scripttarget.Settler)
		e.target = t
		e.closers = append(e.closers, t.Close)
		e.keyBySource(sc)
		ok = true
		return e, nil
	}

	// Simulated gateways.
	lc := limiterConfig(sc)
	var newClient func() redis.UniversalClient
	if !limiter.IsLocal(lc.Algorithm) {
		cfg, stop, err := e.openSimulated(ctx, sc, spec, o)
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, stop)
		note, err := inject.Replicate(ctx, cfg, &lc)
		if err != nil {
			return nil, err
		}
		if note != "" {
			e.notes = append(e.notes, note)
		}
		e.redis = cfg
		e.clock = redisClock(cfg)
		ns := e.namespace(spec)
		lc.Prefix += ns
		keys := prefixKeys(lc.Prefix)
		e.own(cfg, keys, ns)
		e.lc = lc
		e.readShards(ctx, sc, cfg, func(id string) (string, error) {
			return limiter.Keys(lc, id, time.Now())[0], nil
		})
		newClient = cfg.NewClient
		if len(sc.Faults) > 0 {
			s := inject.Setup{Spec: spec, Redis: cfg, Options: o.RedisOptions, Keys: keys, Prefix: lc.Prefix, Limiter: lc, Replicas: e.replicas}
			if newClient, err = e.withFaults(ctx, sc, s); err != nil {
				return nil, err
			}
		}
	}
	set, err := newGateways(ctx, sc, lc, newClient)
	if err != nil {
		return nil, fmt.Errorf("%s: gateways: %w", sc.Name, err)
	}
	e.set = set
	e.closers = append(e.closers, set.Close)
	e.target = simtarget.New(set)
	e.keyBySource(sc)
	for _, f := range sc.Faults {
		if f.Action == scenario.FaultGatewayDown {
			gw, hold := f.Gateway, f.For
			e.hooks = append(e.hooks, traffic.Hook{At: f.At, Name: f.Action, Holds: hold > 0, Fn: func(ctx context.Context) { set.Down(ctx, gw, hold) }})
		}
	}
	ok = true
	return e, nil
}

// keyBySource makes the target key its limit on the identities' source
// addresses when the scenario says so (target.key: source), and says so.
func (e *env) keyBySource(sc *scenario.Scenario) {
	if sc.Target.Key != scenario.KeySource {
		return
	}
	n := sc.Target.Sources
	e.target = traffic.KeyedBySource(e.target, n)
	who := fmt.Sprintf("%d identities from %d source addresses", sc.Traffic.Identities, n)
	if n == 1 {
		who = fmt.Sprintf("all %d identities from one source address", sc.Traffic.Identities)
	}
	e.notes = append(e.notes, fmt.Sprintf("the limit is keyed on the client's address, not the identity: %s, identity i from address i mod %d, so identities sharing an address share one limit", who, n))
}

// httpTLS builds an http target's TLS settings from the PEM the scenario
// loaded; nil when none was given (the system's roots).
func httpTLS(f scenario.TLSFiles) (*tls.Config, error) {
	if !f.Set() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.InsecureSkipVerify} //nolint:gosec // only on explicit request, for a test gateway
	if len(f.CAPEM) > 0 {
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(f.CAPEM) {
			return nil, fmt.Errorf("tls.ca %s: no PEM certificate", f.CA)
		}
	}
	if len(f.CertPEM) > 0 {
		cert, err := tls.X509KeyPair(f.CertPEM, f.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("tls.cert: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// openRedis opens the Redis spec names; with replica, spawn starts a
// primary with one replica (for a real failover).
func openRedis(ctx context.Context, spec string, o Options, replica bool) (*redisconn.Config, func() error, error) {
	replicas := 0
	if replica {
		replicas = 1
	}
	return redisconn.OpenChecked(ctx, spec, o.RedisOptions, replicas)
}

// logMemoryNote reads, right after the run and while the logs are still
// alive, how big the sliding log of the busiest identities is: the price of
// its exactness, one entry per admitted request in the last window.
func logMemoryNote(ctx context.Context, cfg *redisconn.Config, lc limiter.Config, sc *scenario.Scenario, ids []string) []string {
	c := cfg.NewClient()
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var entries, bytes int64
	var worst string
	for _, id := range ids[:min(len(ids), 50)] {
		for _, k := range limiter.Keys(lc, id, time.Now()) {
			n, err := c.ZCard(ctx, k).Result()
			if err != nil || n <= entries {
				continue
			}
			entries, worst = n, id
			// MEMORY USAGE is a real Redis's; the embedded one lacks it.
			bytes, _ = c.MemoryUsage(ctx, k).Result()
		}
	}
	if worst == "" {
		return nil
	}
	size := ""
	if bytes > 0 {
		size = fmt.Sprintf(" (%d bytes)", bytes)
	}
	return []string{fmt.Sprintf("sliding log: %s's log held %d entries%s at the end, one per request admitted in the last %s; its memory grows with the allowed rate × W for every identity", worst, entries, size, sc.Limit.Window)}
}

func limiterConfig(sc *scenario.Scenario) limiter.Config {
	prefix := sc.Target.Prefix
	if prefix == "" {
		prefix = limiter.DefaultPrefix
	}
	return limiter.Config{
		Algorithm: sc.Target.Algorithm, Limit: sc.Limit, Capacity: sc.Target.Capacity,
		Prefix: prefix, Clock: sc.Target.Clock, Pause: sc.Target.Pause,
		Replicate: sc.Target.Replicate, ReplicateTimeout: sc.Target.ReplicateTimeout,
		Lease: limiter.LeaseConfig{Size: sc.Target.Lease.Size, RefillBelow: sc.Target.Lease.RefillBelow, Adaptive: sc.Target.Lease.Adaptive},
	}
}

func planOf(sc *scenario.Scenario) traffic.Plan {
	tr := sc.Traffic
	p := traffic.Plan{
		Model: tr.Model, Pattern: tr.Pattern, Rate: tr.Rate, Duration: tr.Duration,
		MaxRequests: int64(tr.MaxRequests), Workers: tr.Workers, Concurrency: tr.Concurrency,
		Identities: tr.Identities, Spread: tr.Spread, Limit: sc.Limit, BurstSize: tr.BurstSize,
		Align: tr.Align, Rounds: tr.Rounds, Retry: tr.Retry, Think: tr.Think,
	}
	if len(sc.Target.Endpoints) > 1 {
		for _, ep := range sc.Target.Endpoints {
			p.EndpointShares = append(p.EndpointShares, ep.Share)
		}
	}
	if sc.Target.Kind == scenario.KindHTTP && sc.Target.Identity.Source != "" {
		// Identities are their source addresses, the names a gateway's own
		// log gives them. The scenario checked the prefix at load.
		addrs, _ := httptarget.SourceAddrs(sc.Target.Identity.Source, tr.Identities)
		for _, a := range addrs {
			p.IdentityNames = append(p.IdentityNames, a.String())
		}
	}
	return p
}

// analysisOptions sets the envelope a correct limiter of the scenario's own
// design obeys (ceiling.Envelope), so `slipped` counts what the design
// should never allow and not what it allows by design.
func analysisOptions(sc *scenario.Scenario) analysis.Options {
	design := ""
	if sc.Target.Kind == scenario.KindSimulated {
		design = sc.Target.Algorithm
	}
	burst, perSecond := ceiling.Envelope(design, ceiling.Params{
		Limit: sc.Limit, Gateways: sc.Target.Gateways, Lease: sc.Target.Lease.Size, Capacity: sc.Target.Capacity,
	})
	return analysis.Options{EnvelopeBurst: burst, EnvelopeRate: perSecond}
}
