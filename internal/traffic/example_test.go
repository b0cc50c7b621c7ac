package traffic_test

import (
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/traffic"
)

func ExampleConstantPacer() {
	p := traffic.ConstantPacer{Rate: rate.Limit{Count: 4, Window: time.Second}, Duration: time.Second}
	for hits := uint64(0); ; hits++ {
		wait, stop := p.Pace(0, hits)
		if stop {
			break
		}
		fmt.Println(wait)
	}
	// Output:
	// 0s
	// 250ms
	// 500ms
	// 750ms
}
