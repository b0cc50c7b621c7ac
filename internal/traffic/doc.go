// Package traffic is rlctl's bounded load engine: pacing (open model by
// default, closed as an option), the patterns of DESIGN.md (constant, burst,
// ramp, boundary, race), identities and their spread over gateways. Requests
// go to a Target; the targets themselves (simulated gateways, HTTP gateways,
// the user's own Lua script) live in the packages under internal/target,
// which the engine does not import. Every run is bounded in time and
// requests and stops by itself; every request sent becomes a
// history.Record, and every one dropped is tallied in history.Drops.
//
// The shape of a run (Run): a bounded pool of workers sends the requests.
// In the paced patterns (constant, ramp, burst) each idle worker takes the
// next hit of the schedule, waits until it is due and sends it itself, so
// no request is handed from one goroutine to another (see paced.go); the
// boundary and race patterns have one producer goroutine that hands each
// request to a free worker. When no worker is free at the intended time
// the request is dropped, never delayed, and latency is measured from the
// intended time, so a slow target cannot hide its delay (the
// coordinated-omission trap). Under overload a worker goes from one
// request to the next, and a drop costs a tally. One consumer appends
// every record to the history, so recording holds no shared lock and
// allocates nothing. Pacers are pure functions of elapsed time and hits,
// tested without sleeping. Before the clock starts, a target that can
// (Warmer) opens each gateway's connections, so no dial lands inside a
// measured request. Waits end on a precise sleeper (a timerfd on Linux),
// since the runtime's timers wake only to the millisecond (see sleep.go).
// While every run in the process is a paced one and the process uses less
// than three quarters of a core, its goroutines not kept waiting to run,
// it runs on one P, which spares a second thread's wake-up per request
// (see procs.go).
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
