// Package calmtest runs timing-sensitive test work again when the
// machine, not the code under test, was too late for it to measure
// anything: a run rlctl refused for its own lateness, a send lag longer
// than the figure's tolerance, a command that gave up late.
//
// Retry's first try runs beside every other test in the binary. Each
// later try waits until the binary's timers fire on time, then for a gap
// between the binary's other tries (a few seconds at most for each), and
// holds new ones off while it runs: a machine that stalled a run once is
// most likely still crowded by the same tests, and three tries back to
// back among them failed together on a loaded CI runner.
package calmtest
