package traffic

import (
	"os"
	"runtime"
	"sync"
	"time"
)

// A paced run below what one core does costs less CPU on one P: with more,
// each request that becomes ready wakes a second thread to run it, which
// finds nothing else to do and sleeps again, one thread wake-up and sleep
// per request. So while every run in this process is a paced one whose
// process uses less than procsBusy of a core, the process runs on one P
// (GOMAXPROCS 1), and on all of them again as soon as it uses more, or a
// run of another kind starts. Process CPU is the measure: it counts the
// targets that run inside rlctl (the embedded Redis, simulated gateways),
// and whatever else the process does meanwhile.
//
// A process started with GOMAXPROCS set keeps it: the user chose.
var govern = governor{off: os.Getenv("GOMAXPROCS") != ""}

const (
	// procsBusy is the share of a core above which a process on one P
	// gets all of them back, and below which a process on all of them
	// goes to one. The same load costs less on one P, so a run near it
	// stays where it is instead of switching back and forth.
	procsBusy = 0.75
	// procsWindow is how often a paced run reads its process's CPU;
	// procsCalm is how many windows in a row under procsBusy narrow it, so
	// one quiet window does not.
	procsWindow = 50 * time.Millisecond
	procsCalm   = 2
)

// governor sets this process's P count from the runs going on in it.
type governor struct {
	off      bool
	mu       sync.Mutex
	runs     int  // runs in progress
	content  int  // of which are content with one P
	narrowed bool // GOMAXPROCS was set to 1 here
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
// and gives the runtime's default back otherwise. g.mu is held.
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
		runtime.GOMAXPROCS(1)
	} else {
		runtime.SetDefaultGOMAXPROCS()
	}
}

// watch reads the process's CPU every procsWindow until stop is called,
// and tells the governor whether m's run is content with one P: after
// procsCalm windows in a row under procsBusy of a core, and no longer
// after one over it.
func (g *governor) watch(m *member) (stop func()) {
	last, ok := processCPU()
	if g.off || !ok {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(procsWindow)
		defer t.Stop()
		at, calm := time.Now(), 0
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				cpu, _ := processCPU()
				calm = calmer(calm, cpu-last, now.Sub(at))
				last, at = cpu, now
				g.set(m, calm >= procsCalm)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// calmer is how many windows in a row have been calm, after one in which
// the process used cpu over wall: calm when under procsBusy of a core.
func calmer(calm int, cpu, wall time.Duration) int {
	if wall <= 0 || float64(cpu) >= procsBusy*float64(wall) {
		return 0
	}
	return calm + 1
}
