//go:build race

package soak

// raceEnabled: the soak child must then be built again without the race
// detector (see soakBinary).
const raceEnabled = true
