package scenario

import (
	"maps"
	"slices"
	"strings"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/textfmt"
	"github.com/rlctl/rlctl/internal/workload"
)

// Field types, as Fields reports them.
const (
	TypeString    = "string"
	TypeEnum      = "one of"
	TypeInteger   = "integer"
	TypeNumber    = "number"
	TypeBool      = "true or false"
	TypeDuration  = "duration"
	TypeLimit     = "limit"
	TypeList      = "list"
	TypeMapping   = "mapping"
	TypeStringMap = "mapping of strings"
)

// Field is one field a scenario file may hold, as the decoder accepts it,
// with its documentation.
type Field struct {
	// Path is the field's place in a file: "target.endpoints[].on_error"
	// ("[]" stands for any item of a list).
	Path string
	// Type is one of the Type constants, or "list of T" for a list (the
	// fields of a list's mapping items follow as Path+"[].name").
	Type string
	// Values are an enumeration's allowed values, in the decoder's order.
	Values []string
	// Doc says what the field does and its default, in a sentence or two.
	Doc string
	// ValueDocs says what each of Values does, when that needs saying.
	ValueDocs map[string]string
}

// Fields lists every field the decoder accepts, found by walking the
// decoder's own field tables (so the list cannot drift from what a file
// may hold), documented from fieldDocs and valueDocs, in the order of
// fieldDocs; a field without documentation comes last, with an empty Doc.
func Fields() []Field {
	d := newDecoder("")
	d.schema = &schema{seen: map[string]bool{}}
	d.document(probe)
	// A list's items ("faults[]") are described by the list itself: its
	// type says what they are, and a mapping item's fields follow it.
	items := map[string]string{}
	var out []Field
	for _, f := range d.schema.fields {
		if list, ok := strings.CutSuffix(f.Path, "[]"); ok {
			items[list] = f.Type
			continue
		}
		out = append(out, f)
	}
	for i := range out {
		if t, ok := items[out[i].Path]; ok {
			t, _, _ = strings.Cut(t, " like ")
			out[i].Type = "list of " + textfmt.Plural(2, t)
		}
	}
	docs, values := Docs()
	order := map[string]int{}
	for i, fd := range docs {
		order[fd.Path] = i + 1
	}
	for i := range out {
		f := &out[i]
		if j := order[f.Path]; j > 0 {
			f.Doc = docs[j-1].Doc
		}
		f.ValueDocs = values[f.Path]
	}
	slices.SortStableFunc(out, func(a, b Field) int {
		oa, ob := order[a.Path], order[b.Path]
		switch {
		case oa == 0 && ob == 0:
			return strings.Compare(a.Path, b.Path)
		case oa == 0:
			return 1
		case ob == 0:
			return -1
		}
		return oa - ob
	})
	return out
}

// Docs are the documentation of every field, in the order help shows them
// (the kinds' own target fields after those of every target), and of
// every enumeration's values, whether or not the decoder accepts the field
// (Fields lists those it does).
func Docs() ([]FieldDoc, map[string]map[string]string) {
	secDocs, secValues := sectionDocs()
	at := slices.IndexFunc(fieldDocs, func(f FieldDoc) bool { return f.Path == "traffic" })
	docs := slices.Concat(fieldDocs[:at], secDocs, fieldDocs[at:])
	values := maps.Clone(valueDocs)
	maps.Copy(values, secValues)
	values["target.kind"] = kindDocs()
	return docs, values
}

// fieldDocs documents the fields of every scenario, in the order help
// shows them; a kind's section documents its own.
var fieldDocs = []FieldDoc{
	{"name", "The scenario's name, unique in a suite; reports, JUnit and history files use it. Letters, digits, '.', '_' and '-'. Required."},
	{"description", "What the scenario shows and why, in a sentence or two; printed when it starts and in every report."},
	{"shows", "What a pass means for the design the scenario runs; reports print it as the verdict (\"flaw demonstrated\", \"design holds\"). Default holds."},
	{"requires", "What the deployment must be for the scenario to mean anything: cluster (a Redis Cluster: --redis spawn-cluster, or a redis+cluster:// URL). On any other Redis the scenario is skipped up front with the reason, shown as skipped in every report, and does not change the exit code. Needs a target whose Redis rlctl reaches (a simulated Redis design or redis-script). Default: none, the scenario runs anywhere."},
	{"limit", "The published limit per identity, N/DURATION: 100/1m, 10/s, 5000/1h. Required. Thresholds call its count limit."},
	{"max_error_rate", "The largest share of sent requests (0 to 1) that may go without a deciding answer (errors, or a failure policy deciding outside the planned faults) before the run counts as not having measured the design: an error, never a pass. Default 0.01 (1%)."},
	{"target", "What the traffic is fired at."},
	{"target.kind", "Default simulated."},
	{"target.gateways", "How many gateways enforce the limit, each with its own Redis connection and clock. Default 1; an http target has one per URL."},
	{"target.redis", "Where the limiter's state lives: embedded (the default: an in-process Redis, nothing to install; fine up to about 1,000 decisions a second), spawn (one real redis-server on a free loopback port, stopped afterwards), spawn-sentinel (a primary, one replica and three Sentinels; gateways connect through the Sentinels), spawn-cluster (a Cluster of three primaries, each with one replica) or a redis:// URL (a run then writes only inside a key namespace of its own). On an http target: the URL (redis://, rediss://, redis+sentinel://, redis+cluster://) of the Redis the deployment's gateways use, which rlctl only reads (the run identities' counters, its clock) unless a fault below was allowed on the command line. rlctl verify --redis replaces it."},
	{"target.timeout", "simulated and redis-script: how long one Redis call may take before the endpoint's on_error decides, so a slow Redis cannot hang a request. Default 50ms. (On an http target, a file without request_timeout may use it as that: older files keep their meaning.)"},
	{"target.clock_skew", "The largest gateway clock offset: gateways get offsets spread over ±clock_skew, so designs that trust gateway clocks show their drift. Default 0s."},
	{"target.replicate", "Lua designs only: each admission waits for this many replicas to acknowledge the script's write (WAIT N, sent right after the script on the same connection), so a failover promotes a replica that holds every admitted count. An admission acknowledged by fewer within replicate_timeout is treated as a Redis failure: the endpoint's on_error decides (closed refuses it, keeping the cap; open admits it as fail-open; local uses the local allowance), since the count it rests on may not survive a failover; a denial stands as it is. A real Redis needs that many replicas connected (redis: spawn starts them); the embedded Redis, and one without enough replicas, has none, so there it is emulated: no WAIT is sent (no latency cost is measured) and a staged failover keeps every count, and the report says so. Default 0 (asynchronous replication)."},
	{"target.replicate_timeout", "With replicate: how long WAIT waits for the replicas, whole milliseconds, shorter than every endpoint timeout. Default half the shortest endpoint timeout."},
	{"target.key", "simulated only: what the gateways key the limit on. Default identity."},
	{"target.sources", "with key: source, how many client addresses the identities send from (identity i from address i mod sources): 1 puts every user behind one address, as an office behind NAT."},
	{"target.endpoints", "The endpoints behind the gateways, each with its share of the traffic and its failure policy. Default: one endpoint named default with share 1."},
	{"target.endpoints[].name", "The endpoint's name, unique in the scenario (login, feed …)."},
	{"target.endpoints[].share", "The endpoint's share of the requests, above 0 and at most 1; shares sum to 1."},
	{"target.endpoints[].on_error", "What the endpoint decides when Redis fails or is slower than the timeout. Default open."},
	{"target.endpoints[].on_failover", "What the endpoint does when it notices a failover (its marker key vanished). Default trust."},
	{"target.endpoints[].timeout", "This endpoint's Redis timeout. Default target.timeout."},
	{"target.endpoints[].local", "With on_error: local, the smaller per-gateway allowance used while Redis fails, like 5/1s."},
	{"traffic", "The load fired at the target. Every run is bounded by duration and max_requests."},
	{"traffic.pattern", "The shape of the load. Default constant."},
	{"traffic.rate", "The offered load of all identities together, N/DURATION like 400/s (constant, ramp and burst patterns; required there in the open model)."},
	{"traffic.duration", "How long the traffic runs. Default 5s, at most 24h."},
	{"traffic.max_requests", "A hard cap on requests: every run is bounded. Default 100000, at most 2^40. A run allowed more than 2,097,152 requests spills its history to disk as it records, 37 bytes a request (46 with retries) in the system's temporary directory, so memory stays flat however long it runs: the disk bounds a soak run."},
	{"traffic.identities", "How many identities (users, API keys) share the traffic; limits are per identity. Default 1."},
	{"traffic.spread", "How the load balancer spreads one identity's requests over the gateways. Default round-robin."},
	{"traffic.segment", "What each process of a run split with verify --segment takes its share of. Default identities."},
	{"traffic.rounds", "race only: how many rounds to fire. Default 50."},
	{"traffic.align", "boundary only: where window boundaries are assumed to fall. Default auto."},
	{"traffic.model", "open (the default): requests leave at their scheduled times whatever the target does, and one that finds no free worker is counted as dropped; closed: concurrency users each wait for an answer before sending again."},
	{"traffic.concurrency", "closed model only: how many requests are kept in flight. Default gateways × identities."},
	{"traffic.workers", "open model only: the most requests in flight at once. Default 0: the engine's own (256, or the largest burst)."},
	{"traffic.burst_size", "burst only: requests each identity fires at once, every window of the limit. Default: the limit's count."},
	{"traffic.think", "closed model only: how long each client pauses after an answer before its next request. Default 0."},
	{"traffic.retry", "closed model only: clients that, after a denial, wait as a client library would and send the same request again; retries are recorded with what they were told and how long they waited."},
	{"traffic.retry.honor", "What a client waits for before retrying. Default retry-after."},
	{"traffic.retry.backoff", "How the backoff B grows with each retry of one request. Default exponential."},
	{"traffic.retry.jitter", "How a client randomises its backoff; with a hint, none comes back exactly when told. Default none."},
	{"traffic.retry.delay", "The backoff of the first retry. Default 100ms."},
	{"traffic.retry.max_delay", "The most an exponential backoff grows to. Default 10s."},
	{"traffic.retry.max_attempts", "Attempts of one request in all, the first included, before the client gives it up. Default 5."},
	{"faults", "Faults injected during the run, each from at (an offset from the start) for for, on the Redis the simulated gateways use (see FAULTS below)."},
	{"faults[].at", "When the fault starts, an offset from the run's start like 2s; before the end of the run. Required."},
	{"faults[].for", "How long it lasts. Default 0s: until the end of the run (failover and redis-reset happen at one instant)."},
	{"faults[].action", "What goes wrong. Required."},
	{"faults[].latency", "redis-latency only: the delay added to every Redis call, like 90ms. Required there."},
	{"faults[].mode", "redis-stall only: what CLIENT PAUSE holds back. Default write."},
	{"faults[].replica_lag", "failover and kill-primary only: the replica is cut off from its primary this long before the fault (its replication user disabled, its link killed), so the promoted replica misses the last replica_lag of counts instead of none. On spawn, spawn-sentinel and spawn-cluster; the emulated or staged failover of the embedded Redis or a given redis:// one misses every count anyway, and on your own Sentinel or Cluster it is refused. At most 2s. Default 0s: the replica is as up to date as Redis keeps it."},
	{"faults[].gateway", "gateway-down only: the index of the gateway to stop (0 for the first). Required there."},
	{"thresholds", "Expressions that must all hold for the scenario to pass: OPERAND OP OPERAND with OP one of < <= > >= == !=, where an operand is a metric (rlctl help metrics), limit (the published count), a number, a duration like 5ms, or a product like 1.5*limit. Latencies (p50, p90, p99, p999, max, recover, send_lag_p99) compare with durations: p99 < 5ms. An unknown name is an error at load time; a metric the run did not measure fails the threshold."},
}

// valueDocs says what each value of an enumeration does.
var valueDocs = map[string]map[string]string{
	"target.key": {
		KeyIdentity: "the limit is per identity: an API key, a user id",
		KeySource:   "the limit is per client address, as nginx limit_req keys it by default",
	},
	"traffic.retry.honor": {
		workload.HonorRetryAfter: "wait at least the Retry-After (or RateLimit t) the denial carried",
		workload.HonorReset:      "wait at least until the reset the answer announced",
		workload.HonorFixed:      "ignore the answer and wait the backoff alone",
	},
	"traffic.retry.backoff": {
		workload.BackoffExponential: "delay·2^(k−1) for the k-th retry, at most max_delay",
		workload.BackoffConstant:    "delay every time",
	},
	"traffic.retry.jitter": {
		workload.JitterNone:  "the backoff exactly",
		workload.JitterFull:  "uniform in [0, B)",
		workload.JitterEqual: "B/2 plus uniform in [0, B/2)",
	},
	"requires": {
		RequireCluster: "a Redis Cluster: the scenario measures something only a Cluster has, such as one shard failing over while the others serve on",
	},
	"shows": {
		design.ShowsHolds: "a pass means the design holds: it keeps every promise the thresholds check",
		design.ShowsFlaw:  "a pass means the flaw was demonstrated: the design is not safe as configured",
	},
	"target.endpoints[].on_error": {
		design.OnErrorOpen:   "admit the request with no limit (fail open): right for a read-only feed, where blocking people over a Redis blip is worse",
		design.OnErrorClosed: "refuse the request (fail closed): right for login and payments, where a slow Redis must not hold the door open",
		design.OnErrorLocal:  "fall back to a smaller per-gateway allowance (local, like 5/1s) counted in the gateway's memory",
	},
	"target.endpoints[].on_failover": {
		design.OnFailoverTrust: "keep counting on the promoted replica, whose counters may have started from zero",
		design.OnFailoverDeny:  "refuse for one window once a failover is noticed (the marker key vanished), so lost counts cannot let a second quota through",
	},
	"traffic.pattern": {
		workload.PatternConstant: "requests evenly spaced at traffic.rate",
		workload.PatternBurst:    "every window of the limit, each identity fires burst_size requests at once",
		workload.PatternRamp:     "the rate climbs from zero to traffic.rate over the run",
		workload.PatternBoundary: "each identity's quota fired just before a window boundary and again just after it (boundary_allowed)",
		workload.PatternRace:     "identities held one below the limit, then one request through every gateway at the same instant, for rounds rounds (race_excess)",
	},
	"traffic.spread": {
		workload.SpreadRoundRobin: "one identity's requests go to each gateway in turn",
		workload.SpreadRandom:     "each request goes to a gateway at random",
		workload.SpreadSticky:     "each identity always reaches the same gateway",
	},
	"traffic.segment": {
		workload.SegmentByIdentities: "each segment sends every request of its block of whole identities (race: of each round's fresh identities; closed model: the clients that speak for them), so no identity's limit is loaded from two machines",
		workload.SegmentByRequests:   "each segment sends its stripe of every identity's requests (closed model: its block of the clients), so one identity (a limit shared by everyone) is loaded from every machine at once; needs an http target, and not race or boundary",
	},
	"traffic.align": {
		workload.AlignEpoch:        "windows start at multiples of W since the Unix epoch",
		workload.AlignFirstRequest: "an identity's first admitted request opens its window",
		workload.AlignAuto:         "learn the boundary from RateLimit-Reset or Retry-After, else from the first denial after a run of admitted requests, else epoch",
	},
	"traffic.model": {
		workload.ModelOpen:   "scheduled sends; a request with no free worker is dropped, never delayed",
		workload.ModelClosed: "concurrency users, each waiting for its answer before the next request",
	},
	"faults[].mode": {
		design.StallWrite: "writes (and scripts) wait; reads are answered",
		design.StallAll:   "every command waits",
	},
	"faults[].action": {
		design.FaultFailover:     "a real failover on spawn (REPLICAOF NO ONE on the replica, gateways redirected), spawn-sentinel (SENTINEL FAILOVER) and spawn-cluster (CLUSTER FAILOVER on the replica of the shard holding the first identity's keys), and on your own Sentinel or Cluster with --allow-failover (an http target's too, named in target.redis: SENTINEL FAILOVER, or CLUSTER FAILOVER on the replica of each shard holding a run identity's counter); on the embedded Redis an emulation: the gateways' Redis is replaced by an empty one, no failover marker (on_failover decides what happens next)",
		design.FaultKillPrimary:  "the primary is killed (SIGKILL) and the topology elects a new one by itself: spawn-sentinel and spawn-cluster (on spawn the replica is promoted and the gateways redirected, as an operator would); never on a Redis rlctl did not start",
		design.FaultRedisDown:    "on an http target (with --allow-faults), the Toxiproxy of target.toxiproxy disables its proxy for for. Elsewhere the gateways are cut off from Redis for for: their connections (to Sentinels and every Cluster node too) are cut and new ones fail, so every call fails and each endpoint's on_error decides. It acts on rlctl's own connections only, so it runs on every Redis, your own Sentinel or Cluster included, and changes nothing on a server",
		design.FaultRedisLatency: "on an http target (with --allow-faults), a latency toxic on target.toxiproxy for for. Elsewhere what the gateways send to Redis arrives latency later for for (on their own connections, on every Redis): calls beyond the timeout go to on_error, and the server still runs them when they arrive",
		design.FaultRedisReset:   "at one instant, the run's limiter keys are deleted, as a flush or an eviction would; on an http target (with --allow-faults), the run identities' keys of target.schema or target.pattern, nothing else",
		design.FaultRedisStall:   "http only, with --allow-faults: the deployment's Redis is paused (CLIENT PAUSE for mode) for for, a server-side stall every gateway feels; Redis 6.2 or newer",
		design.FaultGatewayDown:  "gateway number gateway stops for for: its traffic goes to the others, and a leasing gateway strands its slice",
	},
}
