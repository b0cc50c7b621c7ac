package scenario

import (
	"slices"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/threshold"
	"github.com/rlctl/rlctl/internal/workload"
)

// Target kinds.
const (
	KindSimulated   = "simulated"
	KindHTTP        = "http"
	KindRedisScript = "redis-script"
)

// Redis modes of target.redis besides a URL.
const (
	RedisEmbedded      = "embedded"
	RedisSpawn         = "spawn"
	RedisSpawnSentinel = "spawn-sentinel"
	RedisSpawnCluster  = "spawn-cluster"
)

// The names scenario files use for patterns, spreads, failure policies and
// fault actions are packages workload's and design's, which the traffic
// engine and the limiter use too: a name means one thing everywhere.

// MaxReplicaLag bounds faults[].replica_lag well below what makes a replica
// unfit for promotion: Sentinel skips a replica whose link has been down
// for ten times down-after-milliseconds (8s on spawn-sentinel), a Cluster
// one after ten node timeouts (10s on spawn-cluster).
const MaxReplicaLag = 2 * time.Second

// RequireCluster is the requires value of a scenario that only means
// something on a Redis Cluster: on any other deployment it is skipped up
// front, never run.
const RequireCluster = "cluster"

// What a simulated gateway keys its limit on (target.key).
const (
	// KeyIdentity keys the limit on the identity: an API key, a user id.
	KeyIdentity = "identity"
	// KeySource keys it on the client's source address; target.sources
	// says how many addresses the identities send from.
	KeySource = "source"
)

var (
	patterns    = []string{workload.PatternConstant, workload.PatternBurst, workload.PatternRamp, workload.PatternBoundary, workload.PatternRace}
	spreads     = []string{workload.SpreadRoundRobin, workload.SpreadRandom, workload.SpreadSticky}
	segmentBys  = []string{workload.SegmentByIdentities, workload.SegmentByRequests}
	aligns      = []string{workload.AlignEpoch, workload.AlignFirstRequest, workload.AlignAuto}
	models      = []string{workload.ModelOpen, workload.ModelClosed}
	onErrors    = []string{design.OnErrorOpen, design.OnErrorClosed, design.OnErrorLocal}
	onFailovers = []string{design.OnFailoverTrust, design.OnFailoverDeny}
	actions     = []string{design.FaultFailover, design.FaultKillPrimary, design.FaultRedisDown, design.FaultRedisLatency, design.FaultRedisReset, design.FaultRedisStall, design.FaultGatewayDown}
	stallModes  = []string{design.StallWrite, design.StallAll}
	showsValues = []string{design.ShowsFlaw, design.ShowsHolds}
	requirement = []string{RequireCluster}
	keys        = []string{KeyIdentity, KeySource}
	honors      = []string{workload.HonorRetryAfter, workload.HonorReset, workload.HonorFixed}
	backoffs    = []string{workload.BackoffExponential, workload.BackoffConstant}
	jitters     = []string{workload.JitterNone, workload.JitterFull, workload.JitterEqual}
)

// Scenario is one decoded, defaulted and validated scenario.
type Scenario struct {
	Name        string
	Description string
	// Shows is design.ShowsFlaw when the scenario demonstrates a flaw (its
	// thresholds hold when the flaw appears) or design.ShowsHolds (the default)
	// when it proves the design holds.
	Shows string
	// Requires is RequireCluster when the scenario needs a Redis Cluster
	// (verify skips it elsewhere, saying so), "" when it runs anywhere.
	Requires string
	// File and Line say where the scenario's document starts, for messages.
	File string
	Line int
	// Limit is the published limit per identity.
	Limit   rate.Limit
	Target  Target
	Traffic Traffic
	Faults  []Fault
	// Thresholds are parsed at load; verify evaluates them as they are.
	Thresholds []threshold.Threshold
	// MaxErrorRate is the largest share of sent requests (0 to 1) that may
	// go without a deciding answer from the limiter (errors, and failure
	// policy decisions outside the planned faults) before the run counts as
	// not having measured the design: an error, never a pass, whatever the
	// thresholds say.
	MaxErrorRate float64
}

// Target says what the traffic is fired at.
type Target struct {
	Kind string // simulated | http | redis-script
	// Algorithm is a design's name (design.Names; simulated only).
	Algorithm string
	// Gateways is how many gateways share the limit. For http it is the
	// number of URLs.
	Gateways int
	// Redis is embedded, spawn, spawn-sentinel, spawn-cluster or a redis://
	// URL (simulated, redis-script). On an http target it is the URL of the
	// deployment's own limiter Redis, which rlctl only reads unless a fault
	// the command line allowed acts on it.
	Redis string
	// Timeout bounds each Redis call; an endpoint may override it
	// (simulated, redis-script).
	Timeout time.Duration
	// ClockSkew is the largest per-gateway clock offset; gateways get
	// offsets spread over [-ClockSkew, +ClockSkew].
	ClockSkew time.Duration
	// Pause is redis-get-incr's gap between read and write.
	Pause time.Duration
	// Replicate, when > 0, makes each admission of a Lua design wait for
	// that many replicas to acknowledge its write (WAIT), within
	// ReplicateTimeout; see limiter.Config.Replicate.
	Replicate        int
	ReplicateTimeout time.Duration
	// Clock is gateway, redis or empty (the design's natural default).
	Clock string
	// Prefix starts every limiter key.
	Prefix string
	// Capacity is a token bucket's or GCRA's burst; 0 means the limit count.
	Capacity int64
	// Key is what the gateways key the limit on: KeyIdentity (default) or
	// KeySource, the address the identity sends from (simulated and
	// redis-script targets).
	Key string
	// Sources is how many source addresses the identities send from
	// (identity i from address i mod Sources) when the limit is keyed on
	// the address; it defaults to one per identity.
	Sources   int
	Lease     Lease
	Endpoints []Endpoint

	// Config holds the fields the kind's own section adds (see Section):
	// an http target's URLs, a redis-script target's script. Nil for a
	// kind whose section adds none.
	Config any
}

// Lease parameterises the leasing design.
type Lease struct {
	Size        int64   // slice granted per top-up; 0 = the design's default
	RefillBelow float64 // top up below this fraction of a slice (default 0.2)
	Adaptive    bool    // size slices by recent demand
}

// Endpoint is one endpoint behind the gateways, with its share of the
// traffic and its failure policy.
type Endpoint struct {
	Name       string
	Share      float64 // fraction of requests; shares sum to 1
	OnError    string  // open | closed | local
	OnFailover string  // trust | deny
	Timeout    time.Duration
	// Local is the smaller per-gateway allowance used when OnError is local.
	Local rate.Limit
}

// Traffic is the load fired at the target. Every run is bounded by both
// Duration and MaxRequests.
type Traffic struct {
	Pattern string
	// Rate is the offered load of all identities together (open model).
	Rate        rate.Limit
	Duration    time.Duration
	MaxRequests int
	Identities  int
	Spread      string
	// Segment is what a process running one segment of the scenario
	// (verify --segment) takes its share of: identities (default) or
	// requests.
	Segment string
	// Rounds is how many race rounds to fire (race only).
	Rounds int
	// Align says where window boundaries fall (boundary only).
	Align string
	// Model is open (scheduled, drops when no worker is free) or closed
	// (Concurrency users each waiting for an answer before the next).
	Model       string
	Concurrency int
	// Workers bounds requests in flight in the open model; 0 means the
	// traffic engine's default.
	Workers int
	// BurstSize is how many requests each burst fires (burst only).
	BurstSize int
	// Retry makes the closed model's users clients that retry a denied
	// request as the policy says; nil: no retries.
	Retry *workload.RetryPolicy
	// Think is how long a closed-model client pauses after an answered
	// request.
	Think time.Duration
}

// Fault is one fault injected during the run.
type Fault struct {
	At  time.Duration // offset from the run start
	For time.Duration // 0 means until the end (or instantaneous actions)
	// Action is failover, kill-primary, redis-down, redis-latency,
	// redis-reset, redis-stall or gateway-down.
	Action  string
	Latency time.Duration // redis-latency only
	Gateway int           // gateway-down only: index of the gateway
	// ReplicaLag (failover and kill-primary only) holds replication back
	// for that long before the fault, so the promoted replica misses the
	// last ReplicaLag of counts.
	ReplicaLag time.Duration
	// Mode is what a redis-stall pauses: write (the default) or all.
	Mode string
	Line int
}

// MovesPrimary reports whether s plans a fault that hands its gateways
// over to another Redis server (design.MovesPrimary).
func (s *Scenario) MovesPrimary() bool {
	return slices.ContainsFunc(s.Faults, func(f Fault) bool { return design.MovesPrimary(f.Action) })
}
