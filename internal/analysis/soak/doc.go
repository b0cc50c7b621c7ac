// Package soak holds the soak test of the analysis: 50 million decisions
// recorded into a history spilled to disk and analysed, in a child
// process whose peak resident memory must stay under a ceiling. It has no
// code of its own; it is a package apart so that make test runs it beside
// the built-in suite's test, without the race detector (the child's
// figure is memory, and the race detector multiplies it), from the start
// of the run instead of at the end of analysis's race-built tests.
package soak
