package traffic

import (
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// A paced run below what one core does costs less CPU on one P: with more,
// each request that becomes ready wakes a second thread to run it, which
// finds nothing else to do and sleeps again, one thread wake-up and sleep
// per request. So while every run in this process is a paced one whose
// process is calm (it uses less than procsBusy of a core, and its
// goroutines do not keep waiting to run), the process runs on one P
// (GOMAXPROCS 1), and on all of them again as soon as it is not, or a run
// of another kind starts. Process CPU counts the targets that run inside
// rlctl (the embedded Redis, simulated gateways) and whatever else the
// process does meanwhile; the wait to run catches one P kept busy while
// the machine's other processes leave it less than a core.
//
// A process started with GOMAXPROCS set keeps it: the user chose.
var govern = governor{off: os.Getenv("GOMAXPROCS") != ""}

const (
	// procsBusy is the share of a core above which a process on one P
	// gets all of them back, and below which a process on all of them
	// goes to one. The same load costs less on one P, so a run near it
	// stays where it is instead of switching back and forth.
	procsBusy = 0.75
	// A window in which more than procsLateShare of the goroutines that
	// became ready (as the runtime samples them) waited procsLate or
	// longer to run is late; two in a row are not calm: the P has more to
	// run than it runs. One alone is a collection's mark phase on one P,
	// or a stall of the machine, which more Ps would not end.
	procsLate      = 250 * time.Microsecond
	procsLateShare = 0.02
	// procsWindow is how often a paced run reads its process's CPU;
	// procsCalm is how many calm windows in a row narrow it, so one quiet
	// window does not, doubled at each time it had to widen again (a
	// machine that stalls now and then), up to procsBackoff times.
	procsWindow  = 50 * time.Millisecond
	procsCalm    = 2
	procsBackoff = 4
)

// governor sets this process's P count from the runs going on in it.
type governor struct {
	off      bool
	mu       sync.Mutex
	runs     int  // runs in progress
	content  int  // of which are content with one P
	narrowed bool // GOMAXPROCS was set to 1 here
	prev     int  // what it was before
}

// A member is one run's place in the governor.
type member struct{ content bool }

// join counts a run in; it needs every P until it says otherwise (set).
func (g *governor) join() *member {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runs++
	g.apply()
	return &member{}
}

// leave counts the run out.
func (g *governor) leave(m *member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runs--
	if m.content {
		g.content--
	}
	g.apply()
}

// set says whether the run is content with one P.
func (g *governor) set(m *member, content bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.content == content {
		return
	}
	m.content = content
	if content {
		g.content++
	} else {
		g.content--
	}
	g.apply()
}

// apply narrows the process to one P when every run is content with it,
// and gives back what it was otherwise: the runtime's default, which
// follows the CPU limit, when it was that. g.mu is held.
func (g *governor) apply() {
	narrow := !g.off && g.runs > 0 && g.content == g.runs
	if narrow == g.narrowed {
		return
	}
	if narrow && runtime.GOMAXPROCS(0) == 1 {
		return // nothing to narrow
	}
	g.narrowed = narrow
	if narrow {
		g.prev = runtime.GOMAXPROCS(1)
		return
	}
	runtime.SetDefaultGOMAXPROCS()
	if runtime.GOMAXPROCS(0) != g.prev {
		runtime.GOMAXPROCS(g.prev) // set by the program (go test -cpu)
	}
}

// watch reads the process's CPU and its goroutines' waits every
// procsWindow until stop is called, and tells the governor whether m's
// run is content with one P: after procsCalm calm windows in a row (more
// after each widening, see procsCalm), and no longer after one that is
// not.
func (g *governor) watch(m *member) (stop func()) {
	last, ok := processCPU()
	if g.off || !ok {
		return func() {}
	}
	waits := newSchedWaits()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(procsWindow)
		defer t.Stop()
		at := time.Now()
		var mood calmness
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				cpu, _ := processCPU()
				late, all := waits.read()
				g.set(m, mood.after(underBusy(cpu-last, now.Sub(at)), lateWindow(late, all)))
				last, at = cpu, now
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// calmness is what a run's watch has seen of its windows.
type calmness struct {
	calm    int  // calm windows in a row
	widened int  // times the run was content with one P and then was not
	content bool // content with one P after the last window
	late    bool // the last window was late
}

// after takes in one more window, under procsBusy of a core or not, late
// or not, and says whether the run is content with one P: after
// procsCalm calm windows in a row (under procsBusy, and not the second
// late one in a row), doubled for each time it had to widen before (up to
// procsBackoff doublings).
func (c *calmness) after(underBusy, late bool) bool {
	calm := underBusy && !(late && c.late)
	c.late = late
	if calm {
		c.calm++
	} else {
		if c.content {
			c.widened++
		}
		c.calm = 0
	}
	c.content = c.calm >= procsCalm<<min(c.widened, procsBackoff)
	return c.content
}

// underBusy reports whether the process used cpu over wall, less than
// procsBusy of a core.
func underBusy(cpu, wall time.Duration) bool {
	return wall > 0 && float64(cpu) < procsBusy*float64(wall)
}

// lateWindow reports whether of all the goroutines the runtime sampled
// becoming ready in a window, more than procsLateShare (late of them)
// waited procsLate or longer to run.
func lateWindow(late, all uint64) bool {
	return float64(late) > procsLateShare*float64(all)
}

// schedWaits reads the runtime's histogram of how long goroutines waited
// to run once ready.
type schedWaits struct {
	s    []metrics.Sample
	prev []uint64
}

func newSchedWaits() *schedWaits {
	w := &schedWaits{s: []metrics.Sample{{Name: "/sched/latencies:seconds"}}}
	w.read()
	return w
}

// read returns how many goroutines the runtime sampled becoming ready
// since the last read, and how many of them waited procsLate or longer
// to run.
func (w *schedWaits) read() (late, all uint64) {
	metrics.Read(w.s)
	if w.s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, 0
	}
	h := w.s[0].Value.Float64Histogram()
	if len(w.prev) != len(h.Counts) {
		w.prev = make([]uint64, len(h.Counts))
	}
	for i, c := range h.Counts {
		d := c - w.prev[i]
		w.prev[i] = c
		all += d
		if h.Buckets[i] >= procsLate.Seconds() {
			late += d
		}
	}
	return late, all
}
