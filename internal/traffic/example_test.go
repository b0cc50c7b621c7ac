package traffic_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/traffic"
)

func ExampleParseHints() {
	h := http.Header{}
	h.Set("RateLimit", `"default";r=0;t=30`)
	h.Set("RateLimit-Policy", `"default";q=100;w=60`)
	h.Set("Retry-After", "30")
	hints := traffic.ParseHints(h, time.Now())
	fmt.Println(hints.Limit, hints.Remaining, hints.Reset, hints.RetryAfter)
	// Output: 100 0 30s 30s
}

func ExampleParseRule() {
	r, err := traffic.ParseRule("[1] == 1")
	if err != nil {
		panic(err)
	}
	allowed, _ := r.Match([]any{int64(1), int64(41)}) // a script returning {allowed, remaining}
	denied, _ := r.Match([]any{int64(0), int64(0)})
	fmt.Println(allowed, denied)
	// Output: true false
}

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
