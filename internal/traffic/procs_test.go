package traffic

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
)

func TestUnderBusyAndLateWindow(t *testing.T) {
	w := 50 * time.Millisecond
	for _, c := range []struct {
		name      string
		cpu, wall time.Duration
		want      bool
	}{
		{"half a core", w / 2, w, true},
		{"just under the bound", w*3/4 - 1, w, true},
		{"at the bound", w * 3 / 4, w, false},
		{"more than a core", 2 * w, w, false},
		{"no time passed", 0, 0, false},
	} {
		if got := underBusy(c.cpu, c.wall); got != c.want {
			t.Errorf("%s: underBusy(%v, %v) = %v, want %v", c.name, c.cpu, c.wall, got, c.want)
		}
	}
	for _, c := range []struct {
		name      string
		late, all uint64
		want      bool
	}{
		{"none waited", 0, 300, false},
		{"a few waited", 6, 300, false},
		{"too many waited", 7, 300, true},
		{"nothing sampled", 0, 0, false},
	} {
		if got := lateWindow(c.late, c.all); got != c.want {
			t.Errorf("%s: lateWindow(%d, %d) = %v, want %v", c.name, c.late, c.all, got, c.want)
		}
	}
}

// A run is content with one P after two calm windows in a row, no longer
// after one over procsBusy or the second late one in a row, and needs
// twice as many calm ones after each time it had to widen, up to 2<<4.
func TestCalmnessBacksOffAfterEachWidening(t *testing.T) {
	var c calmness
	// windows feeds n windows and returns the last answer.
	windows := func(n int, underBusy, late bool) bool {
		var content bool
		for range n {
			content = c.after(underBusy, late)
		}
		return content
	}
	if windows(1, true, false) {
		t.Fatal("content after one calm window")
	}
	if !windows(1, true, false) {
		t.Fatal("not content after two")
	}
	// One late window alone (a collection on one P) changes nothing.
	if !windows(1, true, true) || !windows(1, true, false) {
		t.Fatal("one late window widened")
	}
	// Three windows over procsBusy are one widening: the last two came
	// while wide.
	if windows(3, false, false) {
		t.Fatal("content after a busy window")
	}
	if windows(3, true, false) || !windows(1, true, false) {
		t.Fatal("after one widening, not content after exactly four calm windows")
	}
	// The second late window in a row widens.
	if !windows(1, true, true) || windows(1, true, true) {
		t.Fatal("two late windows in a row did not widen")
	}
	for _, need := range []int{8, 16, 32, 32} {
		if windows(need-1, true, false) {
			t.Fatalf("content after %d calm windows, want %d", need-1, need)
		}
		if !windows(1, true, false) {
			t.Fatalf("not content after %d calm windows", need)
		}
		if windows(1, false, false) {
			t.Fatal("content after a busy window")
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

// A paced run narrows while it is light, and widens once it needs more
// than a core. Narrowing needs a calm machine (a starved process's
// goroutines keep waiting to run, which widens it): a try in which the
// light part never ran on one P is run again, alone and after calm.
func TestPacedRunNarrowsWhileLightAndWidensWhenBusy(t *testing.T) {
	n := wide(t)
	var lim *phased
	busy := calmtest.Retry(t, 3, func(int) string {
		lim = &phased{
			windowLimiter: newWindowLimiter(1<<40, time.Hour, 4),
			after:         time.Second, spin: 2 * time.Millisecond,
			before: map[int]bool{}, late: map[int]bool{},
		}
		// 1,000 a second: light for the first second, then two cores'
		// worth.
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
			return fmt.Sprintf("the light part of the run never ran on one P: it ran on %v", lim.before)
		}
		return ""
	})
	if busy != "" {
		t.Fatal(busy)
	}
	if !lim.late[n] {
		t.Errorf("the busy part of the run never got its %d Ps back: it ran on %v", n, lim.late)
	}
	if got := runtime.GOMAXPROCS(0); got != n {
		t.Errorf("after the run GOMAXPROCS is %d, want %d", got, n)
	}
}
