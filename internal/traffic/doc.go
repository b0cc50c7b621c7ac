// Package traffic is rlctl's bounded load engine: pacing (open model by
// default, closed as an option), the patterns of DESIGN.md (constant, burst,
// ramp, boundary, race), identities and their spread over gateways, and the
// targets requests go to (simulated gateways, HTTP gateways, the user's own
// Lua script). Every run is bounded in time and requests and stops by
// itself; every request becomes a history.Record.
package traffic
