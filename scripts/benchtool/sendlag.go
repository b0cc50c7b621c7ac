package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/internal/history"
)

// lateAfter is how late a request may leave and still count as on time:
// the paced runs' send lag target. The bench compares the tools on the
// share of the schedule sent later than this or not at all: vegeta sends
// a hit late when every worker is busy, rlctl's open model drops it.
const lateAfter = time.Millisecond

// sendLag reads vegeta's results as `vegeta encode --to csv` writes them
// (a hit's start in Unix nanoseconds first, its sequence number ninth)
// and returns the 99th percentile of how late each hit started after its
// time on a constant schedule of rate hits a second, counted from hit 0's
// start (the same figure as rlctl's send_lag_p99_ms), and how many hits
// started more than lateAfter late.
func sendLag(r io.Reader, rate float64) (p99 time.Duration, late int, err error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	type hit struct{ seq, at int64 }
	var hits []hit
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, 0, err
		}
		if len(rec) < 9 {
			return 0, 0, fmt.Errorf("a vegeta result of %d fields, want at least 9", len(rec))
		}
		at, err1 := strconv.ParseInt(rec[0], 10, 64)
		seq, err2 := strconv.ParseInt(rec[8], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, err
		}
		hits = append(hits, hit{seq, at})
	}
	if len(hits) == 0 {
		return 0, 0, errors.New("no vegeta results")
	}
	slices.SortFunc(hits, func(a, b hit) int { return int(a.seq - b.seq) })
	start := hits[0].at
	lags := make([]time.Duration, len(hits))
	for i, h := range hits {
		due := start + int64(float64(h.seq)*1e9/rate)
		lags[i] = time.Duration(h.at - due)
		if lags[i] > lateAfter {
			late++
		}
	}
	slices.Sort(lags)
	return lags[len(lags)*99/100], late, nil
}

func runSendLag(args []string) {
	rate, err := 0.0, error(nil)
	if len(args) == 1 {
		rate, err = strconv.ParseFloat(args[0], 64)
	}
	if len(args) != 1 || err != nil || rate <= 0 {
		fmt.Fprintln(os.Stderr, "usage: vegeta encode --to csv RESULTS | benchtool sendlag RATE")
		os.Exit(2)
	}
	p99, late, err := sendLag(os.Stdin, rate)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool sendlag:", err)
		os.Exit(1)
	}
	fmt.Printf("%.3f %d\n", float64(p99)/float64(time.Millisecond), late)
}

// lateOrDropped counts, in a history rlctl wrote, the requests sent more
// than lateAfter after their intended time, and those dropped.
func lateOrDropped(path string) (late int, dropped int64, err error) {
	h, err := history.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	defer h.Close()
	for i := range h.Len() {
		if h.Sent(i)-h.Intended(i) > lateAfter {
			late++
		}
	}
	return late, h.Meta.Drops.Total(), nil
}

func runLate(args []string) {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: benchtool late HISTORY.rlh")
		os.Exit(2)
	}
	late, dropped, err := lateOrDropped(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool late:", err)
		os.Exit(1)
	}
	fmt.Println(late, dropped)
}
