// Package traffic is rlctl's bounded load engine: pacing (open model by
// default, closed as an option), the patterns of DESIGN.md (constant, burst,
// ramp, boundary, race), identities and their spread over gateways. Requests
// go to a Target; the targets themselves (simulated gateways, HTTP gateways,
// the user's own Lua script) live in the packages under internal/target,
// which the engine does not import. Every run is bounded in time and
// requests and stops by itself; every request sent becomes a
// history.Record, and every one dropped is tallied in history.Drops.
//
// The shape of a run (Run): one producer goroutine follows the pattern's
// schedule and hands each request to a bounded pool of workers; when no
// worker is free at the intended time the request is dropped, never
// delayed, and latency is measured from the intended time, so a slow
// target cannot hide its delay (the coordinated-omission trap). Under
// overload the workers of a paced pattern take the schedule's due hits
// themselves and the producer waits (see pull.go): a worker then goes from
// one request to the next with no hand-off, and a drop costs a tally. One
// consumer appends every record to the history, so the hot path holds no
// shared lock and allocates nothing. Pacers are pure functions of elapsed
// time and hits, tested without sleeping. Before the clock starts, a target
// that can (Warmer) opens each gateway's connections, so no dial lands
// inside a measured request. The producer sleeps its last stretch before
// each send on a precise sleeper (a timerfd on Linux), since the runtime's
// timers wake only to the millisecond (see sleep.go).
//
// The boundary pattern first learns where the target's windows roll
// (epoch-aligned, opened by a first request, or told by RateLimit-Reset and
// Retry-After), then fires the quota just before and just after a boundary.
// The race pattern holds fresh identities one below the limit and releases
// one request through every gateway at once; rounds that straddle an
// epoch-aligned boundary are void, so a fresh window's quota never passes
// for a race.
//
// A plan can be split over processes (Plan.Segment, k6's execution
// segments): each walks the whole schedule and sends only its share, whole
// identities by default or a stripe of every identity's requests, so the
// segments together send the plan once; RunOptions.StartAt starts them at
// one wall-clock instant (see segment.go).
package traffic
