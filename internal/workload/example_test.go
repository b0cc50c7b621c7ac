package workload_test

import (
	"fmt"

	"github.com/rlctl/rlctl/internal/workload"
)

func ExampleNewBalancer() {
	b, err := workload.NewBalancer(workload.SpreadRoundRobin, 3, 0)
	if err != nil {
		panic(err)
	}
	for seq := uint64(0); seq < 4; seq++ {
		fmt.Print(b.Pick(1, seq), " ")
	}
	fmt.Println()
	// Output: 1 2 0 1
}
