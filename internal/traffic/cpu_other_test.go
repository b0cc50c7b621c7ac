//go:build !unix

package traffic

import "time"

// processCPU is not measured here: the CPU benchmarks report 0.
func processCPU() time.Duration { return 0 }
