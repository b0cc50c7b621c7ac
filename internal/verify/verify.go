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
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault/inject"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target/httptarget"
	"github.com/rlctl/rlctl/internal/target/scripttarget"
	"github.com/rlctl/rlctl/internal/target/simtarget"
	"github.com/rlctl/rlctl/internal/textfmt"
	"github.com/rlctl/rlctl/internal/traffic"
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
	// AfterRun, when set, is called with the run's Redis once the traffic
	// is over and before rlctl stops what it started, to read back what
	// Redis itself recorded.
	AfterRun func(ctx context.Context, redis *redisconn.Config)
	// Segment is this process's share of the scenario when several
	// processes run it at once (verify --segment); the zero Segment is
	// the whole.
	Segment traffic.Segment
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
	Saved Saved
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
		out.Report.Status, out.Report.Error = report.StatusSkipped, why
		return out, nil
	}
	fail := func(err error) (*Outcome, error) {
		out.Report.Status = report.StatusError
		out.Report.Error = err.Error()
		out.Report.ExitCode = int(exitcode.Of(err))
		return out, err
	}
	env, err := build(ctx, sc, o)
	if err != nil {
		return fail(err)
	}
	defer env.close()
	out.Saved = SavedOf(sc)
	out.Saved.Notes = env.notes

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
		StartAt: o.StartAt, Now: o.Now,
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
	if o.shared() {
		if clockErr == nil {
			var atEnd clockReading
			if atEnd, clockErr = readClock(ctx, env.clock, now); clockErr == nil {
				h.Meta.Clock = combineClock(env.clock.name, atStart, atEnd)
			}
		}
		out.Saved.Notes = append(out.Saved.Notes, sharedNotes(h, o, clockErr)...)
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
		out.Interrupted = true
	}
	out.Saved.Errors = errs.list()

	for _, n := range []string{embeddedNote(sc, o, h), decidedClockNote(h), httpErrorsNote(sc, h)} {
		if n != "" {
			out.Saved.Notes = append(out.Saved.Notes, n)
		}
	}
	if sc.Target.Algorithm == limiter.RedisSlidingLog && env.redis != nil {
		out.Saved.Notes = append(out.Saved.Notes, logMemoryNote(ctx, env.redis, env.lc, sc, h.Meta.Identities)...)
	}
	if env.set != nil && sc.Target.Algorithm == limiter.Leasing {
		out.Saved.Extra = map[string]float64{metric.StrandedLease: float64(env.set.Stats().LeaseStranded)}
	}
	out.Saved.Extra = env.faults.Extra(out.Saved.Extra)
	out.Saved.CountsLostByIdentity = env.faults.CountsLostByIdentity()
	r, err := Score(h, out.Saved)
	if err != nil {
		return fail(err)
	}
	out.Report = r
	if out.Interrupted {
		// Thresholds judged on part of a run would read as a verdict on
		// the whole: the figures stay, the verdict does not.
		out.Report.Status = report.StatusError
		out.Report.Error = fmt.Sprintf("interrupted after %s of %s: the figures cover only what ran, and its thresholds were not judged",
			(time.Duration(r.DurationMs) * time.Millisecond).Round(10*time.Millisecond), sc.Traffic.Duration)
		out.Report.ExitCode = int(exitcode.Interrupted)
		return out, exitcode.With(fmt.Errorf("%s: %s", sc.Name, out.Report.Error), exitcode.Interrupted)
	}
	if r.Status == report.StatusError {
		return out, exitcode.With(fmt.Errorf("%s: %s", sc.Name, r.Error), exitcode.Code(r.ExitCode))
	}
	return out, nil
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

// embeddedBusy is the decision rate above which the embedded Redis's own
// latency shows in a run's figures: miniredis builds a fresh Lua
// interpreter and compiles the script for every EVAL, under one lock, so
// under load it stalls now and then, long enough for a 50ms policy timeout
// to fail open.
const embeddedBusy = 1000

// redisSpec is the Redis a scenario's gateways use: --redis over the
// file's target.redis.
func redisSpec(sc *scenario.Scenario, o Options) string {
	if o.Redis != "" {
		return o.Redis
	}
	return sc.Target.Redis
}

// clockNoteAfter is how far outside their send-receive intervals the
// target's decision times must lie (median) for a report to say so.
const clockNoteAfter = time.Millisecond

// decidedClockNote says so when the decision times a target reported (Redis
// TIME, or an HTTP gateway's X-RateLimit-Decided-At) do not fit rlctl's
// own clock: a decision happened between its request's send and receive,
// so a time outside that interval is the target's clock being off. The
// analysis moves each gateway's times back (see analysis.Analyze); the
// note tells the reader, since the exactness of the ceiling then rests on
// that shift.
func decidedClockNote(h *history.History) string {
	var offs []time.Duration
	// Every record up to a million, then a sample: a soak run's median.
	stride, k := max(1, h.Len()>>20), 0
	eachRecord(h, func(h *history.History, i int) {
		d, s, r := h.Decided(i), h.Sent(i), h.Received(i)
		if d == history.NoTime || s == history.NoTime || r == history.NoTime {
			return
		}
		if k++; k%stride != 0 {
			return
		}
		switch {
		case d < s:
			offs = append(offs, d-s)
		case d > r:
			offs = append(offs, d-r)
		default:
			offs = append(offs, 0)
		}
	})
	if len(offs) == 0 {
		return ""
	}
	slices.Sort(offs)
	med := offs[len(offs)/2]
	if med > -clockNoteAfter && med < clockNoteAfter {
		return ""
	}
	way := "ahead of"
	if med < 0 {
		way, med = "behind", -med
	}
	return fmt.Sprintf("the target's decision times run %v %s rlctl's clock (median, beyond each request's send and receive): the analysis moved them onto rlctl's clock (one shift for every gateway unless their clocks differ from one another)", med.Round(10*time.Microsecond), way)
}

// httpErrorsNote says how an http target's errors enter the figures. A
// 5xx, a timeout or a connection lost while waiting may come after the
// limiter admitted and counted the request (the upstream failed, or the
// answer was slow), so its decision is unknown: ceiling_upper counts it as
// possibly allowed, ceiling does not, and the gateway's own log can say.
func httpErrorsNote(sc *scenario.Scenario, h *history.History) string {
	if sc.Target.Kind != scenario.KindHTTP {
		return ""
	}
	n := 0
	eachRecord(h, func(h *history.History, i int) {
		if h.Outcome(i) == decision.Error && h.By(i) == decision.ByUnanswered {
			n++
		}
	})
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d requests reached the gateway but got no deciding answer (a 5xx, a timeout or a connection lost while waiting): the limiter may have admitted and counted some of them, so ceiling_upper counts them as possibly allowed and ceiling does not; the gateway's own log can tell, or require errors == 0", n)
}

// eachRecord calls fn with every record of h, a chunk at a time when h
// spilled to disk. A read error ends it early: Score's analysis reports
// it.
func eachRecord(h *history.History, fn func(c *history.History, i int)) {
	_ = h.Chunks(func(c *history.History) error {
		for i := range c.Len() {
			fn(c, i)
		}
		return nil
	})
}

// embeddedNote says so when a run on the embedded Redis went that fast.
func embeddedNote(sc *scenario.Scenario, o Options, h *history.History) string {
	spec := redisSpec(sc, o)
	if sc.Target.Kind == scenario.KindHTTP || (spec != "" && spec != scenario.RedisEmbedded) || h.Len() == 0 {
		return ""
	}
	var last time.Duration
	eachRecord(h, func(h *history.History, i int) { last = max(last, h.Sent(i)) })
	if last <= 0 {
		return ""
	}
	perSec := float64(h.Len()) / last.Seconds()
	if perSec < embeddedBusy {
		return ""
	}
	return fmt.Sprintf("embedded Redis: %.0f decisions/s; above about %d/s its own latency (a fresh Lua interpreter per EVAL) shows in latency, timeouts and fail-open figures: use redis: spawn or --redis for those", perSec, embeddedBusy)
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
			DeniedStatus: sc.Target.DeniedStatus, Timeout: sc.Target.Timeout, TLS: tlsConf,
			Sources: sources, ProbeSource: probeSrc, Redact: sc.Target.Redact,
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
		e.own(cfg, keys, ns)
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
		})
		if err != nil {
			return nil, fmt.Errorf("%s: redis-script target: %w", sc.Name, err)
		}
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

// notes turn figures into the plain-language findings a reader needs. Each
// says only what the figures bear out.
func notes(h *history.History, s Saved, m analysis.Metrics) []string {
	var out []string
	limit := s.Limit
	L := float64(limit.Count)
	W := limit.Window
	if c, ok := m[metric.Ceiling]; ok && c > L {
		out = append(out, fmt.Sprintf("admitted up to %s for one identity within %s: %s the published %s", textfmt.Num(c), W, textfmt.Ratio(c/L), textfmt.Num(L)))
	}
	if v := m[metric.RaceExcess]; v > 0 {
		out = append(out, fmt.Sprintf("%s passed the check at L−1 beside the one that should: the read and the write are not one atomic step", textfmt.Count(v, "request")))
	}
	if v, ok := m[metric.BoundaryAllowed]; ok && v > L {
		out = append(out, fmt.Sprintf("%s admitted in a short span around a window boundary: L at the end of one window and L at the start of the next", textfmt.Num(v)))
	}
	switch s.Algorithm {
	case limiter.RedisTokenBucket, limiter.LocalTokenBucket, limiter.RedisGCRA:
		out = append(out, bucketNote(s, m))
	case limiter.RedisFixedWindowRefresh:
		out = append(out, "the expiry is refreshed on every request: under continuous traffic the window never rolls and a busy caller stays locked out")
	}
	if v := m[metric.FailOpen]; v > 0 {
		out = append(out, fmt.Sprintf("%s admitted with no limit while Redis failed (fail-open)", textfmt.Count(v, "request")))
	}
	if v := m[metric.FailClosed]; v > 0 {
		out = append(out, fmt.Sprintf("%s refused because Redis failed (fail-closed)", textfmt.Count(v, "request")))
	}
	out = append(out, failoverNotes(s, m)...)
	if m[metric.Dropped] > 0 {
		out = append(out, dropNote(analysis.ExplainDrops(h)))
	}
	if forms := h.Meta.HeaderForms; len(forms) > 0 {
		out = append(out, formsNote(forms))
	}
	if h.Meta.Retry != "" {
		out = append(out, retryNote(h.Meta.Retry, m, L))
	}
	if lag, p99 := m[metric.SendLagP99], m[metric.P99]; lag >= sendLagNoteMs && 4*lag >= p99 {
		out = append(out, fmt.Sprintf("rlctl itself sent 1%% of requests %sms or more after their scheduled time (its own CPU or scheduling, not the target): latency is measured from the schedule, so p99 %sms includes that delay; a lower rate, fewer gateways or a quieter machine gives the target's own figure", textfmt.Num(lag), textfmt.Num(p99)))
	}
	return out
}

// formNames says what each rate-limit header family is, for notes.
var formNames = map[string]string{
	"retry-after": "Retry-After",
	"draft-11":    "the draft-11 RateLimit and RateLimit-Policy Structured Fields",
	"draft-07":    "draft 07's RateLimit dictionary",
	"draft-06":    "the draft-06 RateLimit-Limit/-Remaining/-Reset fields",
	"x-ratelimit": "the legacy X-RateLimit-* fields",
}

// formsNote says which rate-limit header fields the target answered with.
func formsNote(forms []string) string {
	var names []string
	for _, f := range forms {
		if n, ok := formNames[f]; ok {
			names = append(names, n)
		} else {
			names = append(names, f)
		}
	}
	return "the target's answers carried " + strings.Join(names, ", ")
}

// retryNote says how the retrying clients fared, in the retry figures'
// own words.
func retryNote(policy string, m analysis.Metrics, limit float64) string {
	var parts []string
	if v, ok := m[metric.HerdPeak]; ok {
		parts = append(parts, fmt.Sprintf("the most requests of one identity within %s after a reset was %g (%.2g× the limit)", analysis.HerdSpan, v, v/limit))
	}
	if v, ok := m[metric.Relimited]; ok {
		parts = append(parts, fmt.Sprintf("%.0f%% of retries were denied again", 100*v))
	}
	if v, ok := m[metric.RetryWaitExcess]; ok {
		parts = append(parts, fmt.Sprintf("an admitted retry came back on average %.3gms after the quota was seen back", v))
	}
	if v, ok := m[metric.RetryAfterEarly]; ok {
		parts = append(parts, fmt.Sprintf("%.0f%% of the retries that waited exactly what they were told were denied with nothing admitted meanwhile (an early hint)", 100*v))
	}
	if len(parts) == 0 {
		return "clients retried denied requests (" + policy + "); no retry was answered"
	}
	return "clients retried denied requests (" + policy + "): " + strings.Join(parts, "; ")
}

// bucketNote says what a bucket's figures mean: within its envelope
// (capacity C refilled at L per W, up to C+L−1 in one window) that is the
// design, not a leak; beyond it, requests slipped and it is a leak.
func bucketNote(s Saved, m analysis.Metrics) string {
	L := float64(s.Limit.Count)
	C := s.Analysis.EnvelopeBurst
	if C <= 0 {
		C = L
	}
	slipped := m[metric.Slipped]
	if slipped <= 0 {
		return fmt.Sprintf("a bucket of capacity %s refilled at %s per %s admits up to %s in one sliding window: that is its envelope (burst + sustained rate), not a leak", textfmt.Num(C), textfmt.Num(L), s.Limit.Window, textfmt.Num(C+L-1))
	}
	return fmt.Sprintf("%s slipped beyond the envelope a bucket of capacity %s refilled at %s per %s can admit (measured burst %s, sustained %s/s): a leak, not the envelope", textfmt.Count(slipped, "request"), textfmt.Num(C), textfmt.Num(L), s.Limit.Window, textfmt.Num(m[metric.Burst]), textfmt.Num(m[metric.SustainedRate]))
}

// dropNote says why requests were dropped: the workers all waited on slow
// answers (the target), or rlctl could not keep up (itself).
func dropNote(d analysis.Drops) string {
	if d.SlowTarget {
		waiting := "all " + textfmt.Count(d.Workers, "worker") + " were waiting"
		if d.Workers == 1 {
			waiting = "the one worker was waiting"
		}
		return fmt.Sprintf("%s dropped: %s on answers (%sms on average at %.0f/s offered, so %.0f would have to be in flight): the target was slow, not rlctl", wereDropped(d.Dropped), waiting, textfmt.Num(float64(d.Service.Microseconds())/1000), d.Rate, d.Rate*d.Service.Seconds())
	}
	return fmt.Sprintf("%s dropped: no worker was free at the scheduled time while answers came back in %sms on average (rlctl, not the limiter, was the bottleneck for those: its own CPU or scheduling)", wereDropped(d.Dropped), textfmt.Num(float64(d.Service.Microseconds())/1000))
}

// wereDropped is "1 request was" or "12 requests were".
func wereDropped(n int64) string {
	if n == 1 {
		return "1 request was"
	}
	return textfmt.Count(n, "request") + " were"
}

// sendLagNoteMs is the send lag (p99, ms) from which a report says that
// rlctl's own delay, not the target's, makes up much of the latency.
const sendLagNoteMs = 1
