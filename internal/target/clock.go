package target

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/history"
)

// ShareClock makes the run's history say where this machine's clock stood
// against the target's reference, so report merge can line up the
// histories of a shared run's machines: it reads the reference now (call
// it just before the traffic) and again once the traffic is over (a Finish
// step, after the kind's own), and records the two in h.Meta.Clock. The
// function it returns says, after Finish, why that could not be done; nil
// when it was.
func (b *Built) ShareClock(ctx context.Context, now func() time.Time) func() error {
	if b.Clock == nil {
		err := errors.New("no reference clock to read: the target has no Redis and is not http")
		return func() error { return err }
	}
	atStart, err := readClock(ctx, b.Clock, now)
	b.OnFinish(func(ctx context.Context, h *history.History, _ *Finished) {
		if err != nil {
			return
		}
		var atEnd reading
		if atEnd, err = readClock(ctx, b.Clock, now); err == nil {
			h.Meta.Clock = combineClock(b.Clock.Name, atStart.offset(), atEnd.offset())
		}
	})
	return func() error { return err }
}

// WatchRedisClock reads the target's Redis clock now (call it just
// before the traffic) and again once the traffic is over (a Finish step),
// and records in h.Meta.RedisMoved how far that clock moved against this
// machine's steady clock in between, less what the readings leave
// uncertain (score's steady-clock check). Only a Redis is read: an http
// target's clock would cost the user's limiter a request. A reading that
// fails leaves the move unmeasured, zero.
func (b *Built) WatchRedisClock(ctx context.Context) {
	if b.Clock == nil || b.Clock.Name != redisTime {
		return
	}
	// time.Now's readings carry the steady clock, which movedSince uses.
	start, err := readClock(ctx, b.Clock, time.Now)
	if err != nil {
		return
	}
	b.OnFinish(func(ctx context.Context, h *history.History, _ *Finished) {
		if end, err := readClock(ctx, b.Clock, time.Now); err == nil {
			h.Meta.RedisMoved = end.movedSince(start)
		}
	})
}

// movedSince is how far the reference moved against this machine's
// steady clock from s to r, less what the two readings leave uncertain
// (their round trips and the reference's resolution): zero when within
// it. Both were read with time.Now.
func (r reading) movedSince(s reading) time.Duration {
	moved := r.at.Sub(s.at) - r.mid.Sub(s.mid)
	slack := r.half + r.res + s.half + s.res
	switch {
	case moved > slack:
		return moved - slack
	case moved < -slack:
		return moved + slack
	}
	return 0
}

// reading is one reading of a reference: what it said (at, to its
// resolution res), and the local time halfway through the round trip that
// read it (mid, half the round trip away from either end): the reference
// was read somewhere in that round trip.
type reading struct {
	at, mid   time.Time
	res, half time.Duration
}

// readClock reads ref once, between two readings of now.
func readClock(ctx context.Context, ref *Clock, now func() time.Time) (reading, error) {
	t0 := now()
	at, res, err := ref.Read(ctx)
	t1 := now()
	if err != nil {
		return reading{}, fmt.Errorf("read the reference clock (%s): %w", ref.Name, err)
	}
	half := t1.Sub(t0) / 2
	return reading{at: at, mid: t0.Add(half), res: res, half: half}, nil
}

// clockReading is this machine's clock minus a reference's, within
// ±uncertainty.
type clockReading struct {
	offset, uncertainty time.Duration
}

// offset is this machine's clock minus the reference's at r, taken at the
// middle of the round trip: uncertain by half of it, plus half the
// reference's resolution.
func (r reading) offset() clockReading {
	return clockReading{offset: r.mid.Sub(r.at.Add(r.res / 2)), uncertainty: r.half + r.res/2}
}

// combineClock is what the readings at a run's start and end say of its
// whole span: their mean offset, uncertain by the larger reading's
// uncertainty plus half of how far the offset moved between them (the
// clocks' drift over the run).
func combineClock(name string, a, b clockReading) history.Clock {
	mean := a.offset + (b.offset-a.offset)/2
	drift := b.offset - a.offset
	if drift < 0 {
		drift = -drift
	}
	return history.Clock{Offset: mean, Uncertainty: max(a.uncertainty, b.uncertainty) + drift/2, Reference: name}
}
