package analysis

import "time"

// Metric names are a contract: scenario thresholds and report.json use them.
const (
	Requests          = "requests"
	Allowed           = "allowed"
	Denied            = "denied"
	Errors            = "errors"
	Dropped           = "dropped"
	Ceiling           = "ceiling"
	CeilingUpper      = "ceiling_upper"
	CeilingRatio      = "ceiling_ratio"
	Burst             = "burst"
	SustainedRate     = "sustained_rate"
	BoundaryAllowed   = "boundary_allowed"
	RaceExcess        = "race_excess"
	Slipped           = "slipped"
	FailOpen          = "fail_open"
	FailClosed        = "fail_closed"
	AfterFaultCeiling = "after_fault_ceiling"
	RecoverMs         = "recover_ms"
	StrandedLease     = "stranded_lease"
	RetryAfterMissing = "retry_after_missing"
	P50               = "p50_ms"
	P90               = "p90_ms"
	P99               = "p99_ms"
	P999              = "p999_ms"
	Max               = "max_ms"
	SendLagP99        = "send_lag_p99_ms"
	// The retry figures, measured when clients retried denied requests
	// (see Analyze).
	HerdPeak        = "herd_peak"
	Relimited       = "relimited"
	RetryWaitExcess = "retry_wait_excess_ms"
	RetryAfterEarly = "retry_after_early"
)

// Names lists every metric name, in report order.
var Names = []string{
	Requests, Allowed, Denied, Errors, Dropped, Ceiling, CeilingUpper,
	CeilingRatio, Burst, SustainedRate, BoundaryAllowed, RaceExcess, Slipped,
	FailOpen, FailClosed, AfterFaultCeiling, RecoverMs, StrandedLease,
	RetryAfterMissing, P50, P90, P99, P999, Max, SendLagP99,
	HerdPeak, Relimited, RetryWaitExcess, RetryAfterEarly,
	ElectionErrors, ElectionFailOpen, ElectionFailClosed, ElectionMs,
	FailoverDenied, FailoverDetectMs, FailoverDenyMs, CountsLost,
}

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
	// ceiling_upper, ceiling_ratio, burst, sustained_rate, boundary_allowed
	// and after_fault_ceiling; summed over identities for counts, slipped,
	// race_excess, fail_open and fail_closed; latencies over all requests
	// that ran. See Analyze for each definition.
	Metrics Metrics
	// PerIdentity holds each identity's own figures, in Meta order. A run
	// with more than 10,000 identities lists only the 10,000 worst (highest
	// ceiling, then most allowed); PerIdentityOmitted counts the rest. The
	// scenario's Metrics always cover every identity.
	PerIdentity        []IdentityResult
	PerIdentityOmitted int
	// PerGateway holds counts and latency per gateway, in Meta order.
	PerGateway []GatewayResult
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
	// Histogram is the overall latency HdrHistogram (µs, 1 µs to 1 h,
	// 3 significant figures) in the compressed V2 encoding, so runs from
	// several machines can be merged exactly with MergeHistograms.
	Histogram []byte
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
	// Histogram is this gateway's latency HdrHistogram, encoded like
	// Result.Histogram.
	Histogram []byte
}
