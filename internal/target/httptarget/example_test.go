package httptarget_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/rlctl/rlctl/internal/target/httptarget"
)

func ExampleParseHints() {
	h := http.Header{}
	h.Set("RateLimit", `"default";r=0;t=30`)
	h.Set("RateLimit-Policy", `"default";q=100;w=60`)
	h.Set("Retry-After", "30")
	hints := httptarget.ParseHints(h, time.Now())
	fmt.Println(hints.Limit, hints.Remaining, hints.Reset, hints.RetryAfter)
	// Output: 100 0 30s 30s
}
