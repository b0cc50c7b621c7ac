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
		var atEnd clockReading
		if atEnd, err = readClock(ctx, b.Clock, now); err == nil {
			h.Meta.Clock = combineClock(b.Clock.Name, atStart, atEnd)
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
	start, err := readSteady(ctx, b.Clock)
	if err != nil {
		return
	}
	b.OnFinish(func(ctx context.Context, h *history.History, _ *Finished) {
		if end, err := readSteady(ctx, b.Clock); err == nil {
			h.Meta.RedisMoved = end.movedSince(start)
		}
	})
}

// steadyReading is one reading of a clock against this machine's steady
// clock: the clock read at, and the steady instant halfway through the
// round trip that read it, within ±uncertain.
type steadyReading struct {
	at, mid   time.Time
	uncertain time.Duration
}

func readSteady(ctx context.Context, ref *Clock) (steadyReading, error) {
	t0 := time.Now()
	at, res, err := ref.Read(ctx)
	t1 := time.Now()
	if err != nil {
		return steadyReading{}, err
	}
	half := t1.Sub(t0) / 2
	return steadyReading{at: at, mid: t0.Add(half), uncertain: half + res}, nil
}

// movedSince is how far the clock moved against the steady one from s to
// r, less the two readings' uncertainty: zero when within it.
func (r steadyReading) movedSince(s steadyReading) time.Duration {
	moved := r.at.Sub(s.at) - r.mid.Sub(s.mid)
	slack := r.uncertain + s.uncertain
	switch {
	case moved > slack:
		return moved - slack
	case moved < -slack:
		return moved + slack
	}
	return 0
}

// clockReading is one reading of a reference: this machine's clock minus
// the reference's, within ±uncertainty.
type clockReading struct {
	offset, uncertainty time.Duration
}

// readClock reads ref once. The reference was read somewhere between the
// two local readings around the request, so the offset is taken at their
// middle and is uncertain by half the round trip, plus half the
// reference's resolution.
func readClock(ctx context.Context, ref *Clock, now func() time.Time) (clockReading, error) {
	t0 := now()
	at, res, err := ref.Read(ctx)
	t1 := now()
	if err != nil {
		return clockReading{}, fmt.Errorf("read the reference clock (%s): %w", ref.Name, err)
	}
	half := t1.Sub(t0) / 2
	return clockReading{
		offset:      t0.Add(half).Sub(at.Add(res / 2)),
		uncertainty: half + res/2,
	}, nil
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
