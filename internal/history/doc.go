// Package history is the decision record: every request a run sent, kept in
// a compact struct-of-arrays form in memory (37 bytes a record) and in a
// versioned, checksummed binary file (WriteFile, ReadFile) so runs can be
// saved, re-rendered and merged exactly (Merge). A long run's history
// spills to a temporary file in fixed-size chunks as it is recorded (Spill,
// 37 bytes a record on disk, 46 with retries), so memory stays flat
// whatever the duration; it is read back chunk by chunk (Chunks). A long
// saved file is read the same way, in place (OpenFile), so re-rendering a
// soak run's report takes bounded memory too. The requests a run dropped
// are tallied in its Meta (Drops) rather than recorded one by one.
//
// The traffic engine appends (from one goroutine, its single consumer);
// analysis and reports only read.
package history
