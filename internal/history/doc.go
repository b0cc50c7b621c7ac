// Package history is the decision record: every request a run made, kept in
// a compact struct-of-arrays form in memory and in a versioned binary file
// so runs can be saved, re-rendered and merged exactly.
//
// The traffic engine appends (from one goroutine, its single consumer);
// analysis and reports only read.
package history
