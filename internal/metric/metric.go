package metric

import "time"

// HerdSpan is the span after a reset in which herd_peak counts one
// identity's arrivals: clients told the same moment come back within it.
const HerdSpan = 100 * time.Millisecond

// Metric names are a contract: scenario thresholds and report.json use them.
const (
	Requests        = "requests"
	Allowed         = "allowed"
	Denied          = "denied"
	Errors          = "errors"
	Dropped         = "dropped"
	Ceiling         = "ceiling"
	CeilingUpper    = "ceiling_upper"
	CeilingRatio    = "ceiling_ratio"
	Burst           = "burst"
	SustainedRate   = "sustained_rate"
	BoundaryAllowed = "boundary_allowed"
	// BoundaryAllowedUpper is boundary_allowed's upper bound.
	BoundaryAllowedUpper = "boundary_allowed_upper"
	RaceExcess           = "race_excess"
	Slipped              = "slipped"
	FailOpen             = "fail_open"
	FailClosed           = "fail_closed"
	AfterFaultCeiling    = "after_fault_ceiling"
	// AfterFaultCeilingUpper is after_fault_ceiling's upper bound.
	AfterFaultCeilingUpper = "after_fault_ceiling_upper"
	RecoverMs              = "recover_ms"
	StrandedLease          = "stranded_lease"
	RetryAfterMissing      = "retry_after_missing"
	P50                    = "p50_ms"
	P90                    = "p90_ms"
	P99                    = "p99_ms"
	P999                   = "p999_ms"
	Max                    = "max_ms"
	SendLagP99             = "send_lag_p99_ms"
	// The retry figures, measured when clients retried denied requests
	// (see analysis.Analyze).
	HerdPeak        = "herd_peak"
	Relimited       = "relimited"
	RetryWaitExcess = "retry_wait_excess_ms"
	RetryAfterEarly = "retry_after_early"
)

// The failover figures (see analysis.Analyze). counts_lost is read from
// Redis by the runner, not from the history, and reaches the report beside
// these.
const (
	ElectionErrors     = "election_errors"
	ElectionFailOpen   = "election_fail_open"
	ElectionFailClosed = "election_fail_closed"
	ElectionMs         = "election_ms"
	FailoverDenied     = "failover_denied"
	FailoverDetectMs   = "failover_detect_ms"
	FailoverDenyMs     = "failover_deny_ms"
	CountsLost         = "counts_lost"
	CounterDrift       = "counter_drift"
)

// The failover figures split by Redis Cluster shard (see
// analysis.Result.PerShard): the identities on the shard a failover acted
// on, and those on the other shards.
const (
	FailedShardElectionUndecided      = "failed_shard_election_undecided"
	FailedShardAfterFaultCeiling      = "failed_shard_after_fault_ceiling"
	FailedShardAfterFaultCeilingUpper = "failed_shard_after_fault_ceiling_upper"
	OtherShardsElectionUndecided      = "other_shards_election_undecided"
	OtherShardsAfterFaultCeiling      = "other_shards_after_fault_ceiling"
	OtherShardsAfterFaultCeilingUpper = "other_shards_after_fault_ceiling_upper"
)

// UpperOf maps a figure that counts only what surely happened (a lower
// bound: an admission counts where its whole [sent, received] interval
// places it) to the figure that also counts what may have (its upper
// bound). A claim held on the lower one alone rests on answer timing.
var UpperOf = map[string]string{
	Ceiling: CeilingUpper, BoundaryAllowed: BoundaryAllowedUpper, AfterFaultCeiling: AfterFaultCeilingUpper,
	FailedShardAfterFaultCeiling: FailedShardAfterFaultCeilingUpper, OtherShardsAfterFaultCeiling: OtherShardsAfterFaultCeilingUpper,
}

// Names lists every metric name, in report order.
var Names = []string{
	Requests, Allowed, Denied, Errors, Dropped, Ceiling, CeilingUpper,
	CeilingRatio, Burst, SustainedRate, BoundaryAllowed, BoundaryAllowedUpper, RaceExcess, Slipped,
	FailOpen, FailClosed, AfterFaultCeiling, AfterFaultCeilingUpper, RecoverMs, StrandedLease,
	RetryAfterMissing, P50, P90, P99, P999, Max, SendLagP99,
	HerdPeak, Relimited, RetryWaitExcess, RetryAfterEarly,
	ElectionErrors, ElectionFailOpen, ElectionFailClosed, ElectionMs,
	FailoverDenied, FailoverDetectMs, FailoverDenyMs, CountsLost, CounterDrift,
	FailedShardElectionUndecided, FailedShardAfterFaultCeiling, FailedShardAfterFaultCeilingUpper,
	OtherShardsElectionUndecided, OtherShardsAfterFaultCeiling, OtherShardsAfterFaultCeilingUpper,
}

// Description says what a metric means to a reader: its unit and one
// sentence. `rlctl help metrics` prints these beside Names.
type Description struct {
	// Unit is what the figure counts or measures, e.g. "requests",
	// "requests/s", "ms", "share (0 to 1)".
	Unit string
	// Text says what the figure is, in one sentence.
	Text string
}

// Descriptions describes every metric in Names. W is the published
// window, L the published count (per identity).
var Descriptions = map[string]Description{
	HerdPeak: {"requests per 100ms", "Runs whose clients retried: the most requests of one identity that arrived within 100ms after a reset, " +
		"against the limit: retries told the same moment come back as one herd."},
	Relimited: {"share (0 to 1)", "Runs whose clients retried: the share of retries that were denied again."},
	RetryWaitExcess: {"ms", "Runs whose clients retried: how much later than the first admission seen after its denial an admitted retry came back " +
		"(a lower bound; threshold name retry_wait_excess)."},
	RetryAfterEarly: {"share (0 to 1)", "Runs whose clients retried: the share of retries that waited exactly what they were told and were denied again " +
		"with nothing of their identity admitted since: the hint was early."},
	Requests: {"requests", "Requests the run scheduled, all identities together, dropped ones included."},
	Allowed:  {"requests", "Requests the limiter admitted, all identities together."},
	Denied:   {"requests", "Requests the limiter refused (a 429 for an http target)."},
	Errors: {"requests", "Requests sent that got no deciding answer: a Redis error or timeout the failure policy " +
		"did not decide, a 5xx, or a lost connection."},
	Dropped: {"requests", "Requests never sent because no worker was free at their scheduled time; " +
		"a note says whether the target or rlctl was too slow."},
	Ceiling: {"requests per W", "The most requests one identity surely had admitted within any window of length W, " +
		"sliding, not only aligned windows: a definite lower bound of the true ceiling."},
	CeilingUpper: {"requests per W", "The same count including every request that may have been decided " +
		"inside the window (its send-to-answer interval touches it): an upper bound; the bounds meet when the target reports its decision time."},
	CeilingRatio: {"× L", "ceiling divided by the published count: 1 means the limit held, 10 means ten times the published limit got through."},
	Burst: {"requests", "The smallest token-bucket capacity b such that every interval of length t saw at most " +
		"b + sustained_rate·t admitted for one identity: the burst the limiter really allowed."},
	SustainedRate: {"requests/s", "Admitted requests per second for one identity after the run's first window: " +
		"the long-run rate the limiter really allowed (runs of two windows or more, as burst)."},
	BoundaryAllowed: {"requests", "The most requests one identity surely had admitted in the short span around one window boundary " +
		"(boundary pattern only; its send-to-answer interval lies inside the span): up to 2L for a fixed window."},
	BoundaryAllowedUpper: {"requests", "The same count including every request that may have been decided " +
		"inside the span (its send-to-answer interval touches it): an upper bound, which slow answers raise."},
	RaceExcess: {"requests", "In race rounds (identities held at L−1, then one request through every gateway at once), " +
		"the requests admitted beyond the one that should pass, summed over rounds."},
	Slipped: {"requests", "Admitted requests that a correct limiter of the published policy (a bucket of the design's " +
		"envelope) could never have admitted: 0 for a design that holds, whatever its ceiling."},
	FailOpen:   {"requests", "Requests admitted with no limit because Redis failed and the endpoint's on_error is open."},
	FailClosed: {"requests", "Requests refused because Redis failed and the endpoint's on_error is closed."},
	AfterFaultCeiling: {"requests per W", "The ceiling over the windows from one W before a fault to one W after it ends (a real failover ends when the new primary took its first write, or an old primary still taking writes was demoted): " +
		"what a failover or outage let through (a definite lower bound, as ceiling)."},
	AfterFaultCeilingUpper: {"requests per W", "The same count including every request that may have been decided inside those windows, " +
		"as ceiling_upper: an upper bound."},
	RecoverMs: {"ms", "From the end of the last fault to the first answer Redis decided again; after a failover, from its start to the first answer " +
		"the new primary decided for a request sent after the election's last error."},
	ElectionErrors: {"requests", "Runs with a failover: requests that got no answer while the primary changed " +
		"(sent from the failover's start, each within 1s of the one before)."},
	ElectionFailOpen:   {"requests", "Runs with a failover: requests admitted by on_error open while the primary changed."},
	ElectionFailClosed: {"requests", "Runs with a failover: requests refused by on_error closed while the primary changed."},
	ElectionMs:         {"ms", "Runs with a failover: from its start to the answer of the last request the election left undecided; 0 when it left none."},
	FailoverDenied: {"requests", "Runs with a failover: requests the gateways refused because they detected it (on_failover: deny, " +
		"the failover marker gone or rewritten); 0 means the detection never fired."},
	FailoverDetectMs: {"ms", "Runs whose gateways detected a failover: from its start to the first request refused for it."},
	FailoverDenyMs:   {"ms", "Runs whose gateways detected a failover: from the first to the last request refused for it, about one W per gateway."},
	CountsLost: {"requests", "Runs with a failover rlctl staged: the design's counters just before it minus what the new primary held right after, " +
		"summed over the run's keys (counter designs: fixed windows, get-incr, clock and sliding windows, the sliding log), read from Redis. " +
		"A lower bound: writes after the first reading (on Sentinel, until the gateways' clients hear of the new primary) and counts that aged out of their window before the second are not in it. " +
		"With replicate, a count lost this way belongs to a request refused when its WAIT failed. " +
		"On an http target with target.schema (or pattern), the same reading through the gateways' own layout, for the run's identities' window counters and logs."},
	CounterDrift: {"requests", "http targets with target.schema (or pattern): what the gateways' own counters held at the end beyond every admission rlctl saw answered in the last W, summed over the run's identities: " +
		"above 0, the limiter counts denied requests or counts twice. A lower bound, and one-sided: a lost increment shows in counts_lost, not here. Identities whose counter was not empty at the start are left out."},
	FailedShardElectionUndecided: {"requests", "Runs with a failover on a Redis Cluster: requests of the identities whose keys the shard that failed over held " +
		"that got no decision from Redis while its primary changed (errors, fail-open, fail-closed, local fallback; sent from the failover's start, each within 1s of the one before)."},
	FailedShardAfterFaultCeiling: {"requests per W", "Runs with a failover on a Redis Cluster: after_fault_ceiling of the worst identity whose keys the shard that failed over held."},
	OtherShardsElectionUndecided: {"requests", "Runs with a failover on a Redis Cluster: requests of the identities on the other shards that got no decision from Redis " +
		"during that election (sent from its start to 1s after its last undecided request or the new primary's first write): 0 means the other shards did not notice."},
	OtherShardsAfterFaultCeiling:      {"requests per W", "Runs with a failover on a Redis Cluster: after_fault_ceiling of the worst identity on the other shards; at most L means their limit held through it."},
	FailedShardAfterFaultCeilingUpper: {"requests per W", "failed_shard_after_fault_ceiling's upper bound: after_fault_ceiling_upper of the same identities."},
	OtherShardsAfterFaultCeilingUpper: {"requests per W", "other_shards_after_fault_ceiling's upper bound: after_fault_ceiling_upper of the same identities."},
	StrandedLease:                     {"requests", "Lease budget granted to gateways and never spent when the run ended (leasing only): quota stranded by gateways that stopped."},
	RetryAfterMissing:                 {"share (0 to 1)", "The share of denials that came without a Retry-After: 0.277 means 27.7% of 429s left the client guessing."},
	P50:                               {"ms", "Median latency from each request's scheduled send time to its answer."},
	P90:                               {"ms", "90th percentile latency from scheduled send to answer."},
	P99:                               {"ms", "99th percentile latency from scheduled send to answer."},
	P999:                              {"ms", "99.9th percentile latency from scheduled send to answer."},
	Max:                               {"ms", "The slowest request, from scheduled send to answer."},
	SendLagP99: {"ms", "99th percentile of how late rlctl itself sent requests after their scheduled time; " +
		"latency includes it, so latency close to it is rlctl's, not the target's."},
}
