package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Hits out of order, each started a known time after its slot on a
// 1,000/s schedule from hit 0's start: the 99th percentile is the lag of
// the hit at that rank, whatever the order vegeta wrote them in.
func TestSendLagP99(t *testing.T) {
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
	got, err := sendLagP99(strings.NewReader(b.String()), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want := 5 * time.Millisecond; got != want {
		t.Errorf("p99 %v, want %v", got, want)
	}
	if _, err := sendLagP99(strings.NewReader(""), 1000); err == nil {
		t.Error("no results: no error")
	}
}
