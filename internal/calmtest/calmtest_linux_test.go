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
