package target_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
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

// A real Redis on this machine keeps its wall clock: the run records the
// move this machine's wall clock made against its steady clock meanwhile
// (none, unless it was stepped), to within the readings' round trips. The
// readings write nothing.
func TestWatchRedisClockOnARealRedis(t *testing.T) {
	srv := redistest.Start(t)
	cfg, err := redisconn.Parse(redisconn.Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	b := &target.Built{Clock: target.RedisClock(cfg)}
	start := time.Now()
	b.WatchRedisClock(context.Background())
	time.Sleep(50 * time.Millisecond)
	h := &history.History{}
	b.Finish(context.Background(), h)
	wall := history.WallMoved(start, time.Now())
	if d := (h.Meta.RedisMoved - wall).Abs(); d > 2*time.Millisecond {
		t.Errorf("the Redis clock moved %v while this machine's wall clock moved %v", h.Meta.RedisMoved, wall)
	}
	if n := srv.Client(t).DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("reading the clock left %d keys", n)
	}
}

// A Redis clock stepped during the run is recorded as its step, less the
// readings' round trips and resolution; a clock that is not a Redis's is
// not read, and one that cannot be read records nothing.
func TestWatchRedisClockRecordsAStep(t *testing.T) {
	stepped := target.RedisClock(nil)
	reads := 0
	stepped.Read = func(context.Context) (time.Time, time.Duration, error) {
		reads++
		now := time.Now()
		if reads > 1 {
			now = now.Add(-40 * time.Millisecond) // stepped back
		}
		return now, time.Microsecond, nil
	}
	b := &target.Built{Clock: stepped}
	b.WatchRedisClock(context.Background())
	h := &history.History{}
	b.Finish(context.Background(), h)
	if got := h.Meta.RedisMoved; got > -39*time.Millisecond || got < -40*time.Millisecond {
		t.Errorf("moved %v, want 40ms back less the readings' uncertainty", got)
	}

	httpReads := 0
	web := &target.Built{Clock: &target.Clock{Name: "http Date", Read: func(context.Context) (time.Time, time.Duration, error) {
		httpReads++
		return time.Now(), time.Second, nil
	}}}
	web.WatchRedisClock(context.Background())
	web.Finish(context.Background(), &history.History{})
	if httpReads != 0 {
		t.Errorf("an http target's clock was read %d times: each read costs the user's limiter a request", httpReads)
	}

	down := target.RedisClock(nil)
	down.Read = func(context.Context) (time.Time, time.Duration, error) {
		return time.Time{}, 0, errors.New("connection refused")
	}
	h = &history.History{}
	b = &target.Built{Clock: down}
	b.WatchRedisClock(context.Background())
	b.Finish(context.Background(), h)
	if h.Meta.RedisMoved != 0 {
		t.Errorf("an unreadable clock recorded a move of %v", h.Meta.RedisMoved)
	}
}
