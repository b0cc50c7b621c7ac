// Package idletest starts the programs a test runs only for what they
// leave behind, not for their timing: a go build of the Dockerfile's
// binary, a build and a run of a soak child. They run at the machine's
// idle CPU priority, so they take only the cores the timing-sensitive
// tests beside them leave, and the go builds run one at a time, so the
// second finds the standard library the first compiled instead of
// compiling it again beside it.
//
// On a fresh clone those builds compiled the whole module a second time
// without the race detector before any test could start; now they take
// only the cores the tests leave, and in make test they find most of the
// module compiled already, by the built-in suite's test (the Makefile's
// SUITE).
package idletest
