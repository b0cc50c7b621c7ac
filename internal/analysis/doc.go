// Package analysis measures what a limiter really did, from a history alone:
// ceiling bounds over sliding windows, the token-bucket envelope (burst and
// sustained rate), boundary bursts, race excess, slipped requests, fault
// figures and latency percentiles. It is pure computation: no Redis, no
// network, no clocks.
//
// The central difficulty is that a client never sees when a limiter
// decided, only when it sent the request and when the answer came back.
// Analyze therefore reports the ceiling as two bounds: what surely happened
// inside one window, and what possibly did; the truth lies between, and the
// bounds meet when the target reports its own decision time.
//
// Cost: one pass over every record for counts and latency (two goroutines on
// different columns), a counting sort of the allowed records by identity,
// then per identity (spread over the CPUs) sorts of its allowed times and
// linear sweeps. Extra memory is 4 bytes per allowed record plus scratch for
// the largest identity (24 bytes per its allowed record) and one latency
// histogram per gateway.
//
// A history spilled to disk (a long run's; see history.History.Spill) is
// analysed by Analyze in three passes over its chunks: the indices in
// use and the clocks' offsets; tallies, latency and, written to a scratch
// file, each identity's records by groups of identities; then per group
// the same per-identity figures, an identity too large for memory sorted
// in runs on disk and merged. Memory stays under about 200 MB whatever the
// run's length (a test holds 50 million records under 300 MB), and the
// Result is the one the in-memory path gives (a property test compares
// them).
package analysis
