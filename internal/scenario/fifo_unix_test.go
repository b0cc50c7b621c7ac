//go:build unix

package scenario_test

import (
	"github.com/rlctl/rlctl/internal/scenario"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// A named pipe given as a scenario (or sitting in a scenario directory) is
// refused at once: opening it would block until some writer came along.
func TestLoadRefusesNamedPipe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{fifo, dir} {
		done := make(chan error, 1)
		go func() { _, err := scenario.Load([]string{arg}); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
				t.Fatalf("Load(%s) = %v, want a 'not a regular file' error", arg, err)
			}
			if exitcode.Of(err) != exitcode.Usage {
				t.Errorf("exit code %d, want usage", exitcode.Of(err))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) still blocked on the pipe after 10s", arg)
		}
	}
}
