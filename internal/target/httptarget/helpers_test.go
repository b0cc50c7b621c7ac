package httptarget

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/traffic"
)

func perSecond(n int64) rate.Limit { return rate.Limit{Count: n, Window: time.Second} }

// fixedWin is one identity's window in limitServer.
type fixedWin struct {
	start time.Time
	count int64
}

// errorsSeen wraps a target and keeps the first few error messages, so a
// failing test can say what went wrong.
type errorsSeen struct {
	traffic.Target
	mu   sync.Mutex
	msgs []string
}

func (e *errorsSeen) Do(ctx context.Context, r traffic.Request) traffic.Response {
	resp := e.Target.Do(ctx, r)
	if resp.Err != nil {
		e.mu.Lock()
		if len(e.msgs) < 5 {
			e.msgs = append(e.msgs, resp.Err.Error())
		}
		e.mu.Unlock()
	}
	return resp
}

func (e *errorsSeen) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprint(e.msgs)
}
