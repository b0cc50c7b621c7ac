// Package scenario reads rlctl scenario files: YAML documents that say which
// limiter design (or live deployment) to drive, with what traffic and faults,
// and which thresholds must hold for the run to pass.
//
// Decoding is strict. It walks yaml.Node trees itself so every mistake names
// the file, the line and the field path, for example
//
//	bad.yaml:7: target.gateways: want an integer, got "many"
//
// and it collects every mistake in a file instead of stopping at the first,
// so a user fixes a file in one pass. Load errors carry exitcode.Usage.
//
// A file holds one scenario per YAML document ("---" separates them). Load
// takes files and directories (every *.yaml and *.yml in a directory,
// sorted by name, not recursive) and checks that names are unique across
// all of them. LoadFS does the same over an fs.FS, for the suite embedded
// in the binary.
//
// The package is the file format alone: it imports no engine, limiter or
// analysis package. The names it accepts come from leaf packages (design,
// workload, metric through threshold). The fields of one target kind (an
// http target's URLs, a redis-script target's script and reply rules) are
// that kind's Section, registered from its own package under
// internal/target: it decodes them with this package's Decoder, so their
// mistakes name file, line and field too, checks them with the parsers its
// target runs, and documents them for help. A binary reads the kinds it
// imports (rlctl: internal/target/all).
//
// # Defaults
//
// Defaults are applied in one place (applyDefaults, which calls each
// kind's own), after decoding and before validation, so a Scenario handed
// out is complete:
//
//	shows                     holds (the other value: flaw)
//	max_error_rate            0.01
//	target.kind               simulated
//	target.redis              embedded (simulated and redis-script)
//	target.gateways           1 (http: the number of urls)
//	target.timeout            50ms
//	target.prefix             rl: (simulated)
//	target.lease.refill_below 0.2 (leasing only)
//	target.endpoints          one endpoint "default", share 1
//	endpoint.on_error         open
//	endpoint.on_failover      trust
//	endpoint.timeout          target.timeout
//	target.method             GET (http)
//	target.identity           {header: X-API-Key} (http, unless {id} is in urls, headers or body;
//	                          source: a prefix giving each identity its own client address)
//	target.denied_status      [429] (http)
//	target.key                identity (simulated, redis-script; source: the client's address)
//	target.sources            identities: one address each (key: source only)
//	traffic.pattern           constant
//	traffic.model             open
//	traffic.duration          5s
//	traffic.max_requests      100000
//	traffic.identities        1
//	traffic.spread            round-robin
//	traffic.segment           identities
//	traffic.rounds            50 (race only)
//	traffic.align             auto (boundary only)
//	traffic.burst_size        the limit's count (burst only)
//	traffic.concurrency       gateways × identities (closed model only)
//	traffic.think             0 (closed model only)
//	traffic.retry             none; given, its honor retry-after, backoff exponential,
//	                          jitter none, delay 100ms, max_delay 10s (at least delay),
//	                          max_attempts 5 (closed model only)
//
// traffic.workers 0 means the traffic engine's own default.
//
// # Thresholds
//
// Each threshold, like "ceiling <= limit" or "p99 < 5ms", is parsed at
// load time (package threshold has the grammar), so a bad one is an error
// naming its file and line; the parsed form is what verify evaluates.
//
// # redis-script templates
//
// A redis-script target's keys and args are templates: {id}, {now_ms},
// {now_s}, {limit}, {window_s}, {window_ms}, {gateway} and {request_id}
// stand for their values, and {{ and }} for literal braces, so a Cluster
// hash tag is written "rl:{{{id}}}:tokens" (giving "rl:{user-1}:tokens").
// Templates are checked at load time.
package scenario
