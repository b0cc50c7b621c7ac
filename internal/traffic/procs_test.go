package traffic

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
)

func TestCalmer(t *testing.T) {
	w := 50 * time.Millisecond
	for _, c := range []struct {
		name      string
		calm      int
		cpu, wall time.Duration
		want      int
	}{
		{"a quiet window adds one", 0, w / 2, w, 1},
		{"and again", 1, w / 2, w, 2},
		{"just under the bound", 2, w*3/4 - 1, w, 3},
		{"at the bound starts over", 3, w * 3 / 4, w, 0},
		{"more than a core starts over", 3, 2 * w, w, 0},
		{"no time passed starts over", 3, 0, 0, 0},
	} {
		if got := calmer(c.calm, c.cpu, c.wall); got != c.want {
			t.Errorf("%s: calmer(%d, %v, %v) = %d, want %d", c.name, c.calm, c.cpu, c.wall, got, c.want)
		}
	}
}

// wide is the P count a process runs on when nothing narrowed it; the
// governor tests need more than one.
func wide(t *testing.T) int {
	t.Helper()
	n := runtime.GOMAXPROCS(0)
	if n == 1 {
		t.Skip("this machine runs Go on one P: there is nothing to narrow")
	}
	return n
}

// The governor's tests set the process's P count: none runs in parallel.
func TestGovernorNarrowsOnlyWhileEveryRunIsContent(t *testing.T) {
	n := wide(t)
	g := &governor{}
	procs := func(step string, want int) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", step, got, want)
		}
	}
	a := g.join()
	procs("a run joined", n)
	g.set(a, true)
	procs("its only run content", 1)
	b := g.join()
	procs("a second run joined", n)
	g.set(b, true)
	procs("both content", 1)
	g.leave(b)
	procs("the second left", 1)
	g.set(a, false)
	procs("the first needs more", n)
	g.set(a, true)
	g.leave(a)
	procs("every run left", n)

	off := &governor{off: true}
	c := off.join()
	off.set(c, true)
	procs("GOMAXPROCS set by the user", n)
	off.leave(c)
}

// phased is a target whose every decision costs spin of CPU once the run
// has gone on for after, and nothing before; it notes the P counts it ran
// on in each phase.
type phased struct {
	*windowLimiter
	start time.Time
	after time.Duration
	spin  time.Duration

	mu           sync.Mutex
	before, late map[int]bool
}

func (p *phased) Do(ctx context.Context, r Request) Response {
	n := runtime.GOMAXPROCS(0)
	late := time.Since(p.start) >= p.after
	p.mu.Lock()
	if late {
		p.late[n] = true
	} else {
		p.before[n] = true
	}
	p.mu.Unlock()
	if late {
		// CPU, not a sleep: the process must be seen busy.
		for end := time.Now().Add(p.spin); time.Now().Before(end); {
		}
	}
	return p.windowLimiter.Do(ctx, r)
}

func TestPacedRunNarrowsWhileLightAndWidensWhenBusy(t *testing.T) {
	n := wide(t)
	lim := &phased{
		windowLimiter: newWindowLimiter(1<<40, time.Hour, 4),
		after:         time.Second, spin: 2 * time.Millisecond,
		before: map[int]bool{}, late: map[int]bool{},
	}
	// 1,000 a second: light for the first second, then two cores' worth.
	plan := Plan{
		Rate:     rate.Limit{Count: 1000, Window: time.Second},
		Duration: 1600 * time.Millisecond, MaxRequests: 1600, Workers: 8, Identities: 4,
	}
	lim.start = time.Now()
	h, err := Run(context.Background(), lim, plan, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if c := traffictest.Counts(h); c[decision.Allowed] == 0 {
		t.Fatalf("nothing was allowed: %v", c)
	}
	if !lim.before[1] {
		t.Errorf("the light part of the run never ran on one P: it ran on %v", lim.before)
	}
	if !lim.late[n] {
		t.Errorf("the busy part of the run never got its %d Ps back: it ran on %v", n, lim.late)
	}
	if got := runtime.GOMAXPROCS(0); got != n {
		t.Errorf("after the run GOMAXPROCS is %d, want %d", got, n)
	}
}
