package scenario

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/redact"
	"github.com/rlctl/rlctl/internal/workload"
)

// Default values; see the package documentation for the full table.
const (
	DefaultGateways    = 1
	DefaultTimeout     = design.DefaultTimeout
	DefaultPrefix      = design.DefaultPrefix
	DefaultRefillBelow = design.DefaultRefillBelow
	DefaultDuration    = 5 * time.Second
	// MaxDuration bounds traffic.duration: a day is longer than any soak
	// run needs, and a typo like 1000h must not hold a Redis for weeks.
	MaxDuration        = 24 * time.Hour
	DefaultMaxRequests = 100000
	// MaxRequests bounds traffic.max_requests: 2^40 records, 37 TiB of a
	// history spilled to disk at 37 bytes each. Past 2 million records a
	// run keeps its history on disk as it records (history.InMemory), so
	// it is the disk that bounds a soak run, not memory.
	MaxRequests       = 1 << 40
	DefaultIdentities = 1
	DefaultRounds     = workload.DefaultRounds
	DefaultEndpoint   = "default"
	// DefaultMaxErrorRate is max_error_rate's default: 1% of requests.
	DefaultMaxErrorRate = 0.01
	// MaxIdentities bounds traffic.identities: what each identity costs
	// (its name, its figures) must follow the requests a run sends.
	MaxIdentities = 1_000_000
	// MaxBatch bounds the requests a burst or boundary pattern fires at
	// once, one worker each.
	MaxBatch = 100_000
)

// nameRE is what a scenario name may look like: safe as a file name and in
// a JUnit class name on every platform.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// applyDefaults fills every field the file left unset. It is the one place
// defaults live, besides those of a kind's own fields, which its section
// fills from here.
func (d *decoder) applyDefaults(sc *Scenario) {
	lines := d.lines
	t := &sc.Target
	if t.Kind == "" {
		t.Kind = KindSimulated
	}
	t.Config = d.configs[t.Kind]
	sec, _ := sectionOf(t.Kind)
	if sec.Defaults != nil {
		sec.Defaults(t, func(path string) bool { return lines[path] > 0 })
	}
	if !sec.Remote && t.Redis == "" {
		t.Redis = RedisEmbedded
	}
	if t.Gateways == 0 && lines["target.gateways"] == 0 {
		t.Gateways = DefaultGateways
	}
	if t.Timeout == 0 && lines["target.timeout"] == 0 {
		t.Timeout = DefaultTimeout
	}
	if lines["target.endpoints"] == 0 {
		t.Endpoints = []Endpoint{{Name: DefaultEndpoint, Share: 1}}
	}
	for i := range t.Endpoints {
		e := &t.Endpoints[i]
		if e.OnError == "" {
			e.OnError = design.OnErrorOpen
		}
		if e.OnFailover == "" {
			e.OnFailover = design.OnFailoverTrust
		}
		if e.Timeout == 0 {
			e.Timeout = t.Timeout
		}
	}
	if t.Replicate > 0 && t.ReplicateTimeout == 0 {
		t.ReplicateTimeout = defaultReplicateTimeout(t.Endpoints)
	}
	if sc.Shows == "" {
		sc.Shows = design.ShowsHolds
	}
	if lines["max_error_rate"] == 0 {
		sc.MaxErrorRate = DefaultMaxErrorRate
	}

	tr := &sc.Traffic
	if tr.Pattern == "" {
		tr.Pattern = workload.PatternConstant
	}
	if tr.Model == "" {
		tr.Model = workload.ModelOpen
	}
	if tr.Duration == 0 && lines["traffic.duration"] == 0 {
		tr.Duration = DefaultDuration
	}
	if tr.MaxRequests == 0 && lines["traffic.max_requests"] == 0 {
		tr.MaxRequests = DefaultMaxRequests
	}
	if tr.Identities == 0 && lines["traffic.identities"] == 0 {
		tr.Identities = DefaultIdentities
	}
	if tr.Spread == "" {
		tr.Spread = workload.SpreadRoundRobin
	}
	if tr.Pattern == workload.PatternRace && tr.Rounds == 0 && lines["traffic.rounds"] == 0 {
		tr.Rounds = DefaultRounds
	}
	if tr.Pattern == workload.PatternBoundary && tr.Align == "" {
		tr.Align = workload.AlignAuto
	}
	if tr.Pattern == workload.PatternBurst && tr.BurstSize == 0 && lines["traffic.burst_size"] == 0 {
		tr.BurstSize = int(min(sc.Limit.Count, math.MaxInt32))
	}
	if tr.Model == workload.ModelClosed && tr.Concurrency == 0 && lines["traffic.concurrency"] == 0 {
		tr.Concurrency = workload.DefaultConcurrency(t.Gateways, tr.Identities)
	}
	if !sec.Remote && t.Key == "" {
		t.Key = KeyIdentity
	}
	if t.Key == KeySource && t.Sources == 0 && lines["target.sources"] == 0 {
		t.Sources = tr.Identities // one address per identity unless told
	}
	if tr.Retry != nil {
		// Checked in validate; a bad policy keeps its values for the message.
		if r, err := tr.Retry.Normalize(); err == nil {
			tr.Retry = &r
		}
	}
}

// validate checks the rules that span fields. It runs after applyDefaults,
// so "absent" is told apart by lines (the fields the file named).
func (d *decoder) validate(sc *Scenario) {
	line := func(path string) int {
		for p := path; ; {
			if l := d.lines[p]; l > 0 {
				return l
			}
			i := strings.LastIndexAny(p, ".[")
			if i < 0 {
				return sc.Line
			}
			p = p[:i]
		}
	}
	bad := func(path, format string, args ...any) { d.errorf(line(path), path, format, args...) }
	set := func(path string) bool { return d.lines[path] > 0 }

	switch {
	case !set("name"):
		bad("name", "missing: every scenario needs a name")
	case !nameRE.MatchString(sc.Name):
		bad("name", "%q is not a safe name: use letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100 characters", sc.Name)
	}
	if !set("limit") {
		bad("limit", "missing: the published limit, like 100/1m")
	}
	if sc.Shows == design.ShowsFlaw && len(sc.Thresholds) == 0 {
		// Without thresholds a scenario claims its published cap, which a
		// flaw scenario exists to break.
		bad("shows", "flaw: name the thresholds that demonstrate the flaw (like boundary_allowed > limit); a scenario without thresholds claims its published cap, ceiling <= limit")
	}

	validateTarget(d, sc, bad, set)
	validateTraffic(d, sc, bad, set)
	validateFaults(d, sc, bad, set)
}

// validateTarget checks the target section: what its kind needs and
// refuses, its Redis, endpoints and policies.
func validateTarget(d *decoder, sc *Scenario, bad func(path, format string, args ...any), set func(string) bool) {
	t := &sc.Target
	// A kind that failed to decode stands as the default, simulated: what
	// depends on the kind would be reasoned from that guess (https read as
	// a simulated target missing its algorithm), so it is left unchecked
	// and the kind's own error speaks for the target.
	known := t.Kind
	if d.failed["target.kind"] {
		known = ""
	}
	sec, _ := sectionOf(known)
	for _, name := range slices.Sorted(maps.Keys(d.owner)) {
		if k := d.owner[name]; set("target."+name) && known != "" && k != t.Kind {
			bad("target."+name, "applies to %s targets only, not %s", k, t.Kind)
		}
	}
	if sc.Requires == RequireCluster && sec.Remote {
		bad("requires", "cluster needs a target whose Redis rlctl reaches (simulated or redis-script); an %s target's Redis is its own", t.Kind)
	}
	if sec.Validate != nil {
		sec.Validate(Check{d: d, bad: bad}, sc)
	}
	if t.Redis != "" && !slices.Contains([]string{RedisEmbedded, RedisSpawn, RedisSpawnSentinel, RedisSpawnCluster}, t.Redis) {
		if u, err := url.Parse(t.Redis); err != nil || !slices.Contains([]string{"redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster", "unix"}, u.Scheme) {
			bad("target.redis", "want embedded, spawn, spawn-sentinel, spawn-cluster or a redis:// URL, got %q", redact.URL(t.Redis))
		}
	}
	if t.Gateways < 1 {
		bad("target.gateways", "need at least one gateway")
	}
	if t.Timeout <= 0 {
		bad("target.timeout", "must be positive: a slow Redis must not hang a request")
	}
	checkReplicate(t, set, bad)

	validateEndpoints(t, bad)

}

// validateTraffic checks the traffic section: its bounds, pattern and
// model, and what they need of the target.
func validateTraffic(d *decoder, sc *Scenario, bad func(path, format string, args ...any), set func(string) bool) {
	t := &sc.Target
	tr := &sc.Traffic
	if tr.Duration <= 0 {
		bad("traffic.duration", "must be positive: every run is bounded in time")
	} else if tr.Duration > MaxDuration {
		bad("traffic.duration", "%s is longer than the cap of %gh: every run is bounded in time", tr.Duration, MaxDuration.Hours())
	}
	if tr.MaxRequests < 1 {
		bad("traffic.max_requests", "must be at least 1: every run is bounded in requests")
	}
	if tr.Identities < 1 {
		bad("traffic.identities", "need at least one identity")
	}
	if sc.MaxErrorRate < 0 || sc.MaxErrorRate > 1 {
		bad("max_error_rate", "want a share from 0 to 1 (0.01 is 1%%), got %v", sc.MaxErrorRate)
	}
	checkIdentities(sc, bad)
	switch tr.Pattern {
	case workload.PatternConstant, workload.PatternBurst, workload.PatternRamp:
		if !set("traffic.rate") && tr.Model == workload.ModelOpen {
			bad("traffic.rate", "missing: the %s pattern needs a rate, like 400/s", tr.Pattern)
		}
	case workload.PatternRace:
		if tr.Rounds < 1 {
			bad("traffic.rounds", "need at least one round")
		}
	}
	if set("traffic.rounds") && tr.Pattern != workload.PatternRace {
		bad("traffic.rounds", "applies to the race pattern only")
	}
	if set("traffic.align") && tr.Pattern != workload.PatternBoundary {
		bad("traffic.align", "applies to the boundary pattern only")
	}
	if set("traffic.burst_size") && tr.Pattern != workload.PatternBurst {
		bad("traffic.burst_size", "applies to the burst pattern only")
	}
	if tr.Pattern == workload.PatternBurst && tr.BurstSize < 1 {
		bad("traffic.burst_size", "must be at least 1")
	}
	if set("traffic.concurrency") && tr.Model != workload.ModelClosed {
		bad("traffic.concurrency", "applies to the closed model only")
	}
	for _, f := range []string{"traffic.retry", "traffic.think"} {
		if set(f) && tr.Model != workload.ModelClosed {
			bad(f, "applies to the closed model only: clients that wait for their answers (model: closed)")
		}
	}
	if tr.Retry != nil {
		if _, err := tr.Retry.Normalize(); err != nil {
			bad("traffic.retry", "%v", err)
		}
	}
	if (tr.Retry != nil || tr.Think > 0) && tr.Model == workload.ModelClosed && tr.Concurrency < tr.Identities {
		bad("traffic.concurrency", "%d clients for %d identities: client c speaks for identity c mod identities, so each identity needs one", tr.Concurrency, tr.Identities)
	}
	if sec, _ := sectionOf(t.Kind); set("target.key") && sec.Remote {
		bad("target.key", "an %s target's gateways key their limit themselves (send the address with identity.source)", t.Kind)
	}
	if set("target.sources") {
		switch {
		case t.Key != KeySource:
			bad("target.sources", "applies with key: source only (a limit keyed on the client's address)")
		case t.Sources < 1 || t.Sources > tr.Identities:
			bad("target.sources", "want 1 to %d (the identities), got %d", tr.Identities, t.Sources)
		}
	}
	if tr.Model == workload.ModelClosed && tr.Concurrency < 1 {
		bad("traffic.concurrency", "must be at least 1")
	}

}

// validateFaults checks each fault: when it happens, what it needs of the
// target and the fields that apply to its action.
func validateFaults(d *decoder, sc *Scenario, bad func(path, format string, args ...any), set func(string) bool) {
	t, tr := &sc.Target, &sc.Traffic
	for i, f := range sc.Faults {
		p := index("faults", i)
		if f.Action == "" {
			if !set(p + ".action") {
				bad(p+".action", "missing: one of %s", strings.Join(actions, ", "))
			}
			continue
		}
		if !set(p + ".at") {
			bad(p+".at", "missing: when the fault starts, like 2s")
		}
		if tr.Duration > 0 && f.At >= tr.Duration {
			bad(p+".at", "%s is not before the end of the run (%s)", f.At, tr.Duration)
		}
		if sec, _ := sectionOf(t.Kind); sec.ValidateFault != nil {
			sec.ValidateFault(Check{d: d, bad: bad}, t, f, p)
		} else if f.Action == design.FaultRedisStall {
			bad(p+".action", "redis-stall pauses a deployment's own Redis (an http target's target.redis); simulated gateways feel redis-latency or redis-down instead")
		}
		if f.Action == design.FaultRedisStall && f.For <= 0 {
			bad(p+".for", "redis-stall needs for, how long Redis is paused, like 500ms")
		}
		if f.Action != design.FaultRedisStall && set(p+".mode") {
			bad(p+".mode", "applies to redis-stall only")
		}
		if f.Action == design.FaultRedisLatency && f.Latency <= 0 {
			bad(p+".latency", "redis-latency needs latency, like 90ms")
		}
		if f.Action != design.FaultRedisLatency && set(p+".latency") {
			bad(p+".latency", "applies to redis-latency only")
		}
		if set(p + ".replica_lag") {
			switch {
			case f.Action != design.FaultFailover && f.Action != design.FaultKillPrimary:
				bad(p+".replica_lag", "applies to failover and kill-primary only")
			case f.ReplicaLag <= 0 || f.ReplicaLag > MaxReplicaLag:
				bad(p+".replica_lag", "want a duration above 0s and at most %s, got %s", MaxReplicaLag, f.ReplicaLag)
			case f.ReplicaLag > f.At:
				bad(p+".replica_lag", "%s starts before the run: at most at (%s)", f.ReplicaLag, f.At)
			}
		}
		if f.Action == design.FaultGatewayDown {
			if f.Gateway < 0 {
				bad(p+".gateway", "gateway-down needs gateway, the index of the gateway to stop")
			} else if f.Gateway >= t.Gateways {
				bad(p+".gateway", "gateway %d does not exist (gateways 0 to %d)", f.Gateway, t.Gateways-1)
			}
		} else if set(p + ".gateway") {
			bad(p+".gateway", "applies to gateway-down only")
		}
	}
}

// checkIdentities bounds traffic.identities by what the run can send, so
// an identity count costs no more than the requests do: at most
// MaxIdentities, no more than the requests planned (each race round needs
// its own identities), and a burst or boundary batch of at most MaxBatch.
func checkIdentities(sc *Scenario, bad func(path, format string, args ...any)) {
	tr := &sc.Traffic
	n := int64(tr.Identities)
	if n > MaxIdentities {
		bad("traffic.identities", "%d identities: at most %d", n, MaxIdentities)
		return
	}
	planned := int64(tr.MaxRequests)
	why := "max_requests"
	if tr.Model == workload.ModelOpen && (tr.Pattern == workload.PatternConstant || tr.Pattern == workload.PatternRamp) && tr.Rate.Window > 0 {
		paced := tr.Rate.PerSecond() * tr.Duration.Seconds()
		if tr.Pattern == workload.PatternRamp {
			paced /= 2
		}
		if p := int64(math.Ceil(paced)); p < planned {
			planned, why = p, "rate × duration"
		}
	}
	if tr.Pattern == workload.PatternRace {
		if r := int64(tr.Rounds); r > 0 && n*r > planned {
			bad("traffic.identities", "%d identities × %d race rounds need %d requests at the least, but the run sends at most %d (%s)", n, r, n*r, planned, why)
		}
		return
	}
	if n > planned {
		bad("traffic.identities", "%d identities, but the run sends at most %d requests (%s): most identities would get none; use at most %d", n, planned, why, planned)
		return
	}
	var batch int64
	switch tr.Pattern {
	case workload.PatternBurst:
		batch = int64(tr.BurstSize) * n
	case workload.PatternBoundary:
		batch = 2 * sc.Limit.Count * n
	}
	if batch > MaxBatch {
		bad("traffic.identities", "%d identities fire %d requests at once (one worker each), at most %d: use fewer identities", n, batch, MaxBatch)
	}
}

// String describes a scenario's target in a few words, for reports, as
// its kind's section says it: "simulated redis-fixed-window ×50".
func (t Target) String() string {
	if sec, ok := sectionOf(t.Kind); ok && sec.Describe != nil {
		return sec.Describe(t)
	}
	return fmt.Sprintf("%s ×%d", t.Kind, t.Gateways)
}

// validateEndpoints checks the endpoints: names, shares summing to one and
// each endpoint's failure policy.
func validateEndpoints(t *Target, bad func(path, format string, args ...any)) {
	if len(t.Endpoints) == 0 {
		bad("target.endpoints", "need at least one endpoint")
	}
	if len(t.Endpoints) > math.MaxUint8 {
		bad("target.endpoints", "at most %d endpoints", math.MaxUint8)
	}
	names := map[string]bool{}
	var sum float64
	for i, e := range t.Endpoints {
		p := index("target.endpoints", i)
		if e.Name == "" {
			bad(p+".name", "missing: every endpoint needs a name")
		} else if names[e.Name] {
			bad(p+".name", "endpoint %q given twice", e.Name)
		}
		names[e.Name] = true
		if e.Share <= 0 || e.Share > 1 {
			bad(p+".share", "want a share above 0 and at most 1, got %v", e.Share)
		}
		sum += e.Share
		if e.OnError == design.OnErrorLocal && e.Local.IsZero() {
			bad(p+".local", "on_error: local needs local, the smaller per-gateway allowance, like 5/1s")
		}
		if !e.Local.IsZero() && e.OnError != design.OnErrorLocal {
			bad(p+".local", "applies with on_error: local only")
		}
		if e.Timeout <= 0 {
			bad(p+".timeout", "must be positive")
		}
	}
	if len(t.Endpoints) > 0 && math.Abs(sum-1) > 1e-6 {
		bad("target.endpoints", "shares sum to %v, want 1", sum)
	}
}
