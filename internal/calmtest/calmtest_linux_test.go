package calmtest

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Watch sees a stall of the whole binary: here the kernel stops it for
// 300ms (SIGSTOP from a child, which sends SIGCONT after).
func TestWatchSeesAStall(t *testing.T) {
	stop := Watch()
	time.Sleep(20 * time.Millisecond)
	pid := strconv.Itoa(os.Getpid())
	if err := exec.Command("sh", "-c", "kill -STOP "+pid+"; sleep 0.3; kill -CONT "+pid).Run(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if worst := stop(); worst < 250*time.Millisecond {
		t.Errorf("a 300ms stop watched as at most %v late", worst)
	}
	if again := stop(); again < 250*time.Millisecond {
		t.Errorf("stop called again returned %v", again)
	}
}

// WatchStalls places a stall: a 300ms stop of the binary lies within the
// stretch around it, and none of it in the stretches before and after.
func TestWatchStallsPlacesAStall(t *testing.T) {
	stop := WatchStalls()
	time.Sleep(20 * time.Millisecond)
	before := time.Now()
	pid := strconv.Itoa(os.Getpid())
	if err := exec.Command("sh", "-c", "kill -STOP "+pid+"; sleep 0.3; kill -CONT "+pid).Run(); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	time.Sleep(20 * time.Millisecond)
	s := stop()
	if in := s.Within(before, after); in < 250*time.Millisecond || in > after.Sub(before) {
		t.Errorf("a 300ms stop within [%v]: %v", after.Sub(before), in)
	}
	if in := s.Within(before.Add(-time.Hour), before.Add(-time.Minute)); in != 0 {
		t.Errorf("%v of stall an hour before the watch", in)
	}
	if in := s.Within(after.Add(50*time.Millisecond), after.Add(time.Hour)); in > 10*time.Millisecond {
		t.Errorf("%v of stall after the stop ended", in)
	}
	if s.Worst < 250*time.Millisecond {
		t.Errorf("worst %v", s.Worst)
	}
}
