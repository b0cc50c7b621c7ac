package analysis

import "time"

// Metrics maps a metric name to its value. A metric that does not apply to
// a run is absent, not zero.
type Metrics map[string]float64

// Point is one sample of a time series, at an offset from the run start.
type Point struct {
	At    time.Duration
	Value float64
}

// Result is everything analysis measured for one run.
type Result struct {
	// Metrics are the scenario's figures: the worst identity's for ceiling,
	// ceiling_upper, ceiling_ratio, burst, sustained_rate, boundary_allowed,
	// after_fault_ceiling and their upper bounds; summed over identities for
	// counts, slipped, race_excess, fail_open and fail_closed; latencies
	// over all requests that ran. See Analyze for each definition.
	Metrics Metrics
	// Conduct is how the run itself went: the target's decision times,
	// the race's releases, the boundary's shots.
	Conduct Conduct
	// PerIdentity holds each identity's own figures, in Meta order. A run
	// with more than 10,000 identities lists only the 10,000 worst (highest
	// ceiling, then most allowed); PerIdentityOmitted counts the rest. The
	// scenario's Metrics always cover every identity.
	PerIdentity        []IdentityResult
	PerIdentityOmitted int
	// PerGateway holds counts and latency per gateway, in Meta order.
	PerGateway []GatewayResult
	// PerEndpoint holds each endpoint's failover figures, in Meta order,
	// when the run had a failover fault; nil otherwise.
	PerEndpoint []EndpointResult
	// PerShard holds each Redis Cluster shard's failover figures, in order
	// of the first identity it held, when the history names the
	// identities' shards (Meta.Shards) and a failover the shard it acted
	// on; nil otherwise.
	PerShard []ShardResult
	// PerIdentityFailover holds, when the run had a failover, each
	// identity's own election figures (from its own undecided requests,
	// chained as the scenario's are), its failover_denied and its
	// after_fault_ceiling, in Meta order; past MaxFailoverIdentities only
	// the worst (see WorstFailoverFirst). Nil without a failover.
	PerIdentityFailover []IdentityResult
	// Timeline is allowed requests per interval (all identities, by
	// decision time), for the "allowed per interval against the limit"
	// chart; Interval is its step and each Point.At an interval's start.
	Timeline []Point
	Interval time.Duration
	// Sliding is the worst identity's (highest ceiling) allowed count in the
	// trailing window over time, the curve to hold against the published
	// limit: one point per Interval, each the highest count reached in it.
	Sliding []Point
	// Percentiles is the latency percentile curve at log-spaced
	// percentiles from 0 to 99.99.
	Percentiles []PercentilePoint
	// HerdAt is the reset (offset from the run start) after which herd_peak
	// was counted, and Arrivals the requests of that identity sent per
	// ArrivalBin around it (each Point.At relative to HerdAt, from
	// -ArrivalBefore), RetryArrivals the retries among them: the chart of
	// arrivals around a window start. Empty without retries.
	HerdAt        time.Duration
	Arrivals      []Point
	RetryArrivals []Point
}

// PercentilePoint is one point of the latency percentile curve.
type PercentilePoint struct {
	Percentile float64 // 0..100
	Millis     float64
}

// IdentityResult is one identity's figures.
type IdentityResult struct {
	Identity string
	Metrics  Metrics
}

// GatewayResult is one gateway's figures.
type GatewayResult struct {
	Gateway    string
	Requests   int64
	Allowed    int64
	Denied     int64
	Errors     int64
	Dropped    int64
	P50Millis  float64
	P90Millis  float64
	P99Millis  float64
	P999Millis float64
	MaxMillis  float64
}
