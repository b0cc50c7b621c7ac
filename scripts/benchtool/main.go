// Command benchtool helps scripts/bench.sh compare rlctl with reference
// tools on the same work: it prints the Lua source rlctl runs for a design
// (so redis-benchmark can EVALSHA exactly the same script), reads a
// figure out of a report.json, runs the bare go-redis loop the decision
// benchmark's premise names, times the reference SCAN passes of
// scripts/bench-keys.sh, and reads vegeta's send lag from its results.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/internal/limiter"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: benchtool lua ALGORITHM | benchtool rate REPORT.json [METRIC] | benchtool loop REDIS_URL SHA | benchtool scanfloor scan|pttl|value REDIS_URL | benchtool sendlag RATE | benchtool late HISTORY.rlh | benchtool pacedfloor HOST:PORT SHA RATE")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "lua":
		src, ok := limiter.Scripts()[os.Args[2]]
		if !ok {
			fmt.Fprintf(os.Stderr, "no script for %q\n", os.Args[2])
			os.Exit(2)
		}
		fmt.Print(src)
	case "loop":
		if len(os.Args) < 4 {
			fmt.Fprintln(os.Stderr, "usage: benchtool loop REDIS_URL SHA")
			os.Exit(2)
		}
		if err := bareLoop(os.Args[2], os.Args[3], 50, 5*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "benchtool:", err)
			os.Exit(1)
		}
	case "scanfloor":
		runScanFloor(os.Args[2:])
	case "sendlag":
		runSendLag(os.Args[2:])
	case "late":
		runLate(os.Args[2:])
	case "pacedfloor":
		rate := 0
		if len(os.Args) == 5 {
			rate, _ = strconv.Atoi(os.Args[4])
		}
		if rate <= 0 {
			fmt.Fprintln(os.Stderr, "usage: benchtool pacedfloor HOST:PORT SHA RATE")
			os.Exit(2)
		}
		if err := pacedFloor(os.Args[2], os.Args[3], rate, 5*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "benchtool:", err)
			os.Exit(1)
		}
	case "rate":
		// The first scenario's requests and its errors+dropped, from which
		// the script works out requests per second over the planned
		// seconds (report duration_ms covers setup too).
		var r struct {
			Scenarios []struct {
				Metrics map[string]float64 `json:"metrics"`
			} `json:"scenarios"`
		}
		b, err := os.ReadFile(os.Args[2])
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil || len(r.Scenarios) == 0 {
			fmt.Fprintln(os.Stderr, "benchtool: cannot read", os.Args[2], err)
			os.Exit(1)
		}
		m := r.Scenarios[0].Metrics
		fmt.Printf("%.0f %.0f\n", m["requests"], m["errors"]+m["dropped"])
		if len(os.Args) > 3 {
			// A further argument names one more metric to print, on its
			// own line ("n/a" when the report has none).
			if v, ok := m[os.Args[3]]; ok {
				fmt.Printf("%g\n", v)
			} else {
				fmt.Println("n/a")
			}
		}
	default:
		os.Exit(2)
	}
}
