// Package history is the decision record: every request a run made, kept in
// a compact struct-of-arrays form in memory (37 bytes a record) and in a
// versioned, checksummed binary file (WriteFile, ReadFile) so runs can be
// saved, re-rendered and merged exactly (Merge).
//
// The traffic engine appends (from one goroutine, its single consumer);
// analysis and reports only read.
package history
