package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/rlctl/rlctl/internal/traffic"
)

// plainProgressEvery is how often a traffic run prints a status line when
// stderr is not a terminal, so CI logs show life without filling up.
const plainProgressEvery = 5 * time.Second

// trafficProgress shows a traffic run: an mpb bar on a terminal (requests,
// allowed/denied, rate, time left), else a plain status line every few
// seconds and one at the end. With --no-progress it shows nothing. Update is
// traffic.RunOptions.Progress; call Done when the run has returned.
type trafficProgress struct {
	f       *Factory
	name    string
	planned time.Duration

	mu    sync.Mutex
	stats traffic.Stats
	last  time.Time // last plain line
	ended bool
	// finished is set by Done: the bar's last frame then shows the time
	// the run took instead of the time left.
	finished bool

	p   *mpb.Progress
	bar *mpb.Bar
}

// newTrafficProgress starts the display for one run named name, planned to
// last planned. ctx bounds the bar's renderer.
func newTrafficProgress(ctx context.Context, f *Factory, name string, planned time.Duration) *trafficProgress {
	tp := &trafficProgress{f: f, name: name, planned: planned, last: f.now()}
	if !f.ShowProgress() {
		return tp
	}
	tp.p = mpb.NewWithContext(ctx,
		// The line is as wide as the terminal (120 columns when its size
		// cannot be read); the bar itself takes 30.
		mpb.WithOutput(f.IO.ErrOut), mpb.WithWidth(120),
		mpb.WithRefreshRate(150*time.Millisecond), mpb.ForceAutoRefresh())
	total := max(planned.Milliseconds(), 1)
	tp.bar = tp.p.AddBar(total, mpb.BarWidth(30),
		mpb.PrependDecorators(decor.Name(name+" ", decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			tp.mu.Lock()
			defer tp.mu.Unlock()
			return tp.summary(true)
		})),
	)
	return tp
}

func (f *Factory) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Update takes a snapshot from the traffic engine.
func (tp *trafficProgress) Update(s traffic.Stats) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.stats = s
	if tp.bar != nil {
		tp.bar.SetCurrent(min(s.Elapsed.Milliseconds(), max(tp.planned.Milliseconds(), 1)))
		return
	}
	if tp.f.NoProgress || tp.ended {
		return
	}
	now := tp.f.now()
	if s.Done || now.Sub(tp.last) >= plainProgressEvery {
		tp.last = now
		tp.ended = s.Done
		fmt.Fprintf(tp.f.IO.ErrOut, "  %s: %s\n", tp.name, tp.summary(false))
	}
}

// Done finishes the display: the bar is completed and its renderer
// stopped; off a terminal, the final line is printed if the engine's last
// snapshot did not already print it.
func (tp *trafficProgress) Done() {
	tp.mu.Lock()
	bar, p := tp.bar, tp.p
	// A finished bar says how long the run took, not the time its plan
	// had left: a run cut short (an error, max_requests) ends early.
	tp.finished = true
	tp.mu.Unlock()
	if bar != nil {
		bar.SetTotal(-1, true)
		p.Wait()
		return
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if !tp.f.NoProgress && !tp.ended && tp.stats.Sent+tp.stats.Dropped > 0 {
		tp.ended = true
		fmt.Fprintf(tp.f.IO.ErrOut, "  %s: %s\n", tp.name, tp.summary(false))
	}
}

// summary prints the snapshot; short is the bar's form. tp.mu held.
func (tp *trafficProgress) summary(short bool) string {
	s := tp.stats
	done := s.Done || tp.finished
	if short {
		when := max(s.Planned-s.Elapsed, 0).Round(time.Second).String() + " left"
		if done {
			when = "done in " + s.Elapsed.Round(100*time.Millisecond).String()
		}
		return fmt.Sprintf("%d req  %d ok / %d denied  %.0f/s  %s", s.Completed(), s.Allowed, s.Denied, s.Rate, when)
	}
	when := fmt.Sprintf("%s/%s", s.Elapsed.Round(time.Second), s.Planned)
	if done {
		when = "done in " + s.Elapsed.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s  sent %d  allowed %d  denied %d  errors %d  dropped %d  %.0f/s",
		when, s.Sent, s.Allowed, s.Denied, s.Errors, s.Dropped, s.Rate)
}
