//go:build !linux

package traffic

// newSleeper returns the runtime's timer: only Linux has the precise one.
func newSleeper() sleeper { return coarse{} }
