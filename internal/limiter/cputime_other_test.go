//go:build !unix

package limiter

import "time"

// cpuTime is not measured here: the benchmark's cpu-µs/op reads 0.
func cpuTime() time.Duration { return 0 }
