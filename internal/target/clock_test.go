package target_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/target"
)

// A shared run's history records where this machine's clock stood against
// the reference, read before the traffic and after it: the mean offset,
// uncertain by half of each reading's round trip, half the reference's
// resolution and half the drift between the two.
func TestShareClockRecordsTheOffset(t *testing.T) {
	base := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	local := base
	now := func() time.Time { local = local.Add(2 * time.Millisecond); return local } // each reading's round trip: 2ms
	reads := 0
	b := &target.Built{Clock: &target.Clock{Name: "test", Read: func(context.Context) (time.Time, time.Duration, error) {
		reads++
		// The reference runs 10ms behind at the start and 14ms behind at
		// the end (4ms of drift), to the millisecond.
		behind := 10 * time.Millisecond
		if reads > 1 {
			behind = 14 * time.Millisecond
		}
		return local.Add(time.Millisecond - behind), time.Millisecond, nil
	}}}
	errOf := b.ShareClock(context.Background(), now)
	if reads != 1 {
		t.Fatalf("read %d times before the traffic, want 1", reads)
	}
	h := &history.History{}
	b.Finish(context.Background(), h)
	if err := errOf(); err != nil {
		t.Fatal(err)
	}
	// The reference answers at the middle of each 2ms round trip, to the
	// millisecond: offsets 10ms and 14ms less half the resolution (9.5ms,
	// 13.5ms), uncertain by 1ms + 0.5ms each, and 2ms for half the drift.
	want := history.Clock{Offset: 11500 * time.Microsecond, Uncertainty: 1500*time.Microsecond + 2*time.Millisecond, Reference: "test"}
	if h.Meta.Clock != want {
		t.Fatalf("clock %+v, want %+v", h.Meta.Clock, want)
	}
}

// Without a reference, or when it cannot be read, nothing is recorded and
// the reason is said.
func TestShareClockSaysWhyNot(t *testing.T) {
	if err := (&target.Built{}).ShareClock(context.Background(), time.Now)(); err == nil || !strings.Contains(err.Error(), "no reference clock") {
		t.Errorf("no clock: %v", err)
	}
	b := &target.Built{Clock: &target.Clock{Name: "down", Read: func(context.Context) (time.Time, time.Duration, error) {
		return time.Time{}, 0, errors.New("connection refused")
	}}}
	errOf := b.ShareClock(context.Background(), time.Now)
	h := &history.History{}
	b.Finish(context.Background(), h)
	if err := errOf(); err == nil || !strings.Contains(err.Error(), "read the reference clock (down): connection refused") {
		t.Errorf("unreadable clock: %v", err)
	}
	if h.Meta.Clock != (history.Clock{}) {
		t.Errorf("recorded %+v from a clock that could not be read", h.Meta.Clock)
	}
}
