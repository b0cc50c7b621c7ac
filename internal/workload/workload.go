package workload

// Load models.
const (
	// ModelOpen schedules requests from absolute offsets whatever the target
	// does; a request that finds no free worker is recorded as dropped.
	ModelOpen = "open"
	// ModelClosed keeps a fixed number of requests in flight, no pacing.
	ModelClosed = "closed"
)

// Traffic patterns.
const (
	PatternConstant = "constant"
	PatternBurst    = "burst"
	PatternRamp     = "ramp"
	PatternBoundary = "boundary"
	PatternRace     = "race"
)

// Window alignments the boundary pattern understands.
const (
	// AlignEpoch: windows start at multiples of W since the Unix epoch.
	AlignEpoch = "epoch"
	// AlignFirstRequest: an identity's first allowed request opens its window.
	AlignFirstRequest = "first-request"
	// AlignAuto learns the boundary from RateLimit-Reset / Retry-After, else
	// from the first denial after a series of allowed requests, else epoch.
	AlignAuto = "auto"
)

// Spreads of one identity's requests over gateways.
const (
	SpreadRoundRobin = "round-robin"
	SpreadRandom     = "random"
	SpreadSticky     = "sticky"
)

// DefaultRounds is how many rounds the race pattern fires when not told.
const DefaultRounds = 50

// DefaultConcurrency is how many requests the closed model keeps in flight
// when not told: one per gateway and identity, so every identity can have
// a request at every gateway at once.
func DefaultConcurrency(gateways, identities int) int { return max(1, gateways*identities) }

// What a segment of a plan takes its share of (traffic.Plan.SegmentBy).
const (
	// SegmentByIdentities gives each segment whole identities: the
	// identities (for race, each round's fresh identities) are numbered
	// and a segment takes its block of them (Segment.Block), with
	// every request the plan sends them; in the closed model it runs the
	// clients that speak for its identities. No identity's limit sees two
	// machines.
	SegmentByIdentities = "identities"
	// SegmentByRequests gives each segment its stripe of every identity's
	// requests (Segment.Stripe of the plan's request numbers) and,
	// in the closed model, its block of the clients: one identity is
	// loaded from every machine at once, which a limit shared by everyone
	// (a single identity) needs. Not for race and boundary, whose batches
	// must leave one machine.
	SegmentByRequests = "requests"
)
