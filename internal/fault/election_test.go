package fault

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchElectionSeesEachSide: the watch records the first failed write
// on the old primary, and ends when a write made through Via first lands on
// the new primary, not when the new one merely exists.
func TestWatchElectionSeesEachSide(t *testing.T) {
	var oldDown, promoted, switched atomic.Bool
	var mu sync.Mutex
	onNew := map[string]bool{}
	w := Watch{
		Old: func(context.Context) error {
			if oldDown.Load() {
				return errors.New("READONLY")
			}
			return nil
		},
		Via: func(_ context.Context, token string) error {
			if switched.Load() {
				mu.Lock()
				onNew[token] = true
				mu.Unlock()
			}
			return nil // before the switch, the old primary took it
		},
		Landed: func(_ context.Context, token string) bool {
			mu.Lock()
			defer mu.Unlock()
			return promoted.Load() && onNew[token]
		},
	}
	start := time.Now()
	go func() {
		time.Sleep(30 * time.Millisecond)
		oldDown.Store(true)
		time.Sleep(20 * time.Millisecond)
		promoted.Store(true)
		time.Sleep(20 * time.Millisecond)
		switched.Store(true)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e := WatchElection(ctx, w, 5*time.Millisecond)
	if e.Stopped.IsZero() || e.Answered.IsZero() {
		t.Fatalf("election %+v: a side unseen", e)
	}
	if e.Stopped.Sub(start) < 30*time.Millisecond || e.Answered.Sub(start) < 70*time.Millisecond {
		t.Errorf("stopped after %v (want ≥30ms), answered after %v (want ≥70ms, when writes switched)", e.Stopped.Sub(start), e.Answered.Sub(start))
	}
	if ctx.Err() != nil {
		t.Error("the watch ran until its context ended instead of stopping once writes landed")
	}

	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	switched.Store(false)
	oldDown.Store(false)
	promoted.Store(false)
	mu.Lock()
	clear(onNew) // the tokens start again from 0
	mu.Unlock()
	e = WatchElection(short, w, 5*time.Millisecond)
	if !e.Stopped.IsZero() || !e.Answered.IsZero() {
		t.Errorf("nothing changed, yet the watch saw %+v", e)
	}
}

// TestWatchStopSeesTheDemotion: the old primary of a graceful Sentinel
// failover takes writes until it is turned into a replica; the watch
// returns when it first refuses one, and zero when the run ends first.
func TestWatchStopSeesTheDemotion(t *testing.T) {
	var demoted, slow atomic.Bool
	old := func(ctx context.Context) error {
		if slow.Load() {
			<-ctx.Done() // a probe that timed out is no demotion
			return ctx.Err()
		}
		if demoted.Load() {
			return errors.New("READONLY You can't write against a read only replica.")
		}
		return nil
	}
	start := time.Now()
	slow.Store(true)
	time.AfterFunc(30*time.Millisecond, func() { slow.Store(false) })
	time.AfterFunc(140*time.Millisecond, func() { demoted.Store(true) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if at := WatchStop(ctx, old, 5*time.Millisecond); at.IsZero() || at.Sub(start) < 140*time.Millisecond || ctx.Err() != nil {
		t.Errorf("a probe timed out, then demoted 140ms in: watch returned %v after %v (context %v)", at, at.Sub(start), ctx.Err())
	}
	demoted.Store(false)
	short, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	if at := WatchStop(short, old, 5*time.Millisecond); !at.IsZero() {
		t.Errorf("never demoted, yet the watch saw it at %v", at)
	}
}
