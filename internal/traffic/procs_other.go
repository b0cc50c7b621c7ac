//go:build !unix

package traffic

import "time"

// processCPU is not measured here: no run narrows to one P, and the CPU
// benchmarks report 0.
func processCPU() (time.Duration, bool) { return 0, false }
