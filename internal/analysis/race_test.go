//go:build race

package analysis

// raceEnabled lets the brute-force property test run fewer iterations under
// the race detector, which slows it tenfold and finds nothing more there.
const raceEnabled = true
