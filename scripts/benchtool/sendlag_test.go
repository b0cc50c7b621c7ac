package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
)

// Hits out of order, each started a known time after its slot on a
// 1,000/s schedule from hit 0's start: the 99th percentile is the lag of
// the hit at that rank, whatever the order vegeta wrote them in, and the
// two hits 5 ms late are the only ones later than 1 ms.
func TestSendLag(t *testing.T) {
	const start = int64(1_700_000_000_000_000_000)
	var b strings.Builder
	for seq := int64(199); seq >= 0; seq-- {
		lag := int64(0)
		if seq >= 198 { // the two latest of 200: the top 1%
			lag = int64(5 * time.Millisecond)
		} else if seq > 0 {
			lag = seq * int64(time.Microsecond)
		}
		fmt.Fprintf(&b, "%d,200,1000,0,3,,b2sK,,%d,GET,http://127.0.0.1/,\n", start+seq*int64(time.Millisecond)+lag, seq)
	}
	got, late, err := sendLag(strings.NewReader(b.String()), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want := 5 * time.Millisecond; got != want {
		t.Errorf("p99 %v, want %v", got, want)
	}
	if late != 2 {
		t.Errorf("%d hits late, want 2", late)
	}
	if _, _, err := sendLag(strings.NewReader(""), 1000); err == nil {
		t.Error("no results: no error")
	}
}

// In a history rlctl wrote, a request sent more than 1 ms after its
// intended time is late, one sent at 1 ms or sooner is not, and the drops
// are the history's own tally.
func TestLateOrDropped(t *testing.T) {
	meta := history.Meta{Scenario: "late", Identities: []string{"id"}, Gateways: []string{"gw"}, Endpoints: []string{"default"}}
	h := history.New(meta, 4)
	for i, lag := range []time.Duration{0, time.Millisecond, time.Millisecond + time.Microsecond, 3 * time.Millisecond} {
		at := time.Duration(i) * 10 * time.Millisecond
		h.Append(history.Record{Intended: at, Sent: at + lag, Received: at + lag + time.Millisecond,
			Decided: history.NoTime, RetryAfter: history.NoTime, Round: history.NoRound, Outcome: decision.Allowed})
	}
	for i := range 5 {
		h.Meta.Drops.Add(time.Duration(i)*time.Millisecond, 0, 0, 0)
	}
	path := filepath.Join(t.TempDir(), "late.rlh")
	if err := h.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	late, dropped, err := lateOrDropped(path)
	if err != nil {
		t.Fatal(err)
	}
	if late != 2 || dropped != 5 {
		t.Errorf("late %d, dropped %d: want 2 and 5", late, dropped)
	}
}
