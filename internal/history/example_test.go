package history_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
)

func ExampleMerge() {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	limit := rate.Limit{Count: 100, Window: time.Minute}
	// Two machines ran the same scenario; the second started 2s later and
	// lists the identities in another order.
	a := history.New(history.Meta{Scenario: "s", Start: start, Limit: limit, Identities: []string{"alice", "bob"}}, 1)
	b := history.New(history.Meta{Scenario: "s", Start: start.Add(2 * time.Second), Limit: limit, Identities: []string{"bob"}}, 1)
	a.Append(history.Record{Intended: 3 * time.Second, Sent: 3 * time.Second, Received: 3*time.Second + time.Millisecond,
		Decided: history.NoTime, RetryAfter: history.NoTime, Identity: 1, Outcome: decision.Allowed})
	b.Append(history.Record{Intended: 0, Sent: 0, Received: time.Millisecond,
		Decided: history.NoTime, RetryAfter: history.NoTime, Identity: 0, Outcome: decision.Denied})

	m, err := history.Merge(a, b)
	if err != nil {
		fmt.Println(err)
		return
	}
	var file bytes.Buffer
	if _, err := m.WriteTo(&file); err != nil {
		fmt.Println(err)
		return
	}
	back, err := history.Read(&file)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range back.Len() {
		r := back.At(i)
		fmt.Println(r.Intended, back.Meta.Identities[r.Identity], r.Outcome)
	}
	// Output:
	// 2s bob denied
	// 3s bob allowed
}
