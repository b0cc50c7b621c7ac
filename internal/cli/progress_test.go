package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/traffic"
)

func progressFactory(tty, noProgress bool, now *time.Time) (*Factory, *bytes.Buffer) {
	var errOut bytes.Buffer
	f := &Factory{
		IO:         &IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut, ErrTTY: tty},
		Now:        func() time.Time { return *now },
		NoProgress: noProgress,
	}
	return f, &errOut
}

func TestTrafficProgressPlainLines(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	f, out := progressFactory(false, false, &now)
	tp := newTrafficProgress(context.Background(), f, "lua-holds", 20*time.Second)
	step := func(d time.Duration, s traffic.Stats) {
		now = now.Add(d)
		tp.Update(s)
	}
	// Snapshots every 100 ms for 12 s: lines at 5 s and 10 s only.
	for i := 1; i <= 120; i++ {
		el := time.Duration(i) * 100 * time.Millisecond
		step(100*time.Millisecond, traffic.Stats{Sent: uint64(i * 10), Allowed: uint64(i), Denied: uint64(i * 9),
			Elapsed: el, Planned: 20 * time.Second, Rate: 100})
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d status lines in 12 s; want 2 (every 5 s):\n%s", len(lines), out)
	}
	if !strings.Contains(lines[0], "lua-holds: 5s/20s") || !strings.Contains(lines[0], "sent 500") || !strings.Contains(lines[0], "denied 450") {
		t.Fatalf("first line %q", lines[0])
	}
	step(time.Second, traffic.Stats{Sent: 2000, Allowed: 200, Denied: 1800, Elapsed: 20 * time.Second, Planned: 20 * time.Second, Done: true})
	tp.Done()
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "done in 20s") || !strings.Contains(lines[2], "allowed 200") {
		t.Fatalf("want one final line after the run, got:\n%s", out)
	}
}

func TestTrafficProgressDonePrintsFinalLineOnce(t *testing.T) {
	now := time.Now()
	f, out := progressFactory(false, false, &now)
	tp := newTrafficProgress(context.Background(), f, "s", time.Second)
	tp.Update(traffic.Stats{Sent: 3, Allowed: 3, Elapsed: 500 * time.Millisecond, Planned: time.Second})
	tp.Done()
	tp.Done()
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Fatalf("%d lines; want exactly one final line:\n%s", n, out)
	}
}

func TestTrafficProgressNoProgress(t *testing.T) {
	now := time.Now()
	for _, tty := range []bool{false, true} {
		f, out := progressFactory(tty, true, &now)
		tp := newTrafficProgress(context.Background(), f, "s", time.Second)
		now = now.Add(10 * time.Second)
		tp.Update(traffic.Stats{Sent: 1, Allowed: 1, Elapsed: time.Second, Planned: time.Second, Done: true})
		tp.Done()
		if out.Len() != 0 {
			t.Fatalf("tty=%v: --no-progress printed %q", tty, out)
		}
	}
}

func TestTrafficProgressBarOnTerminal(t *testing.T) {
	now := time.Now()
	f, out := progressFactory(true, false, &now)
	tp := newTrafficProgress(context.Background(), f, "boundary-burst", 2*time.Second)
	tp.Update(traffic.Stats{Sent: 40, Allowed: 12, Denied: 28, Elapsed: time.Second, Planned: 2 * time.Second, Rate: 40})
	tp.Update(traffic.Stats{Sent: 80, Allowed: 20, Denied: 60, Elapsed: 2 * time.Second, Planned: 2 * time.Second, Rate: 40, Done: true})
	tp.Done()
	s := out.String()
	for _, want := range []string{"boundary-burst", "20 ok / 60 denied", "40/s"} {
		if !strings.Contains(s, want) {
			t.Fatalf("bar output lacks %q:\n%q", want, s)
		}
	}
}

// A finished bar says how long the run took, never the time its plan had
// left: a run that ends early (max_requests, an error) must not read as
// still running.
func TestTrafficProgressFinishedBarSaysDone(t *testing.T) {
	for _, tc := range []struct {
		name string
		last traffic.Stats
	}{
		{"engine said done", traffic.Stats{Sent: 80, Allowed: 20, Denied: 60, Elapsed: time.Second, Planned: 6 * time.Second, Rate: 80, Done: true}},
		{"run cut before the engine's last snapshot", traffic.Stats{Sent: 80, Allowed: 20, Denied: 60, Elapsed: time.Second, Planned: 6 * time.Second, Rate: 80}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			f, out := progressFactory(true, false, &now)
			tp := newTrafficProgress(context.Background(), f, "early-end", 6*time.Second)
			tp.Update(traffic.Stats{Sent: 40, Allowed: 12, Denied: 28, Elapsed: 500 * time.Millisecond, Planned: 6 * time.Second, Rate: 80})
			tp.Update(tc.last)
			tp.Done()
			lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			if strings.Contains(last, "left") || !strings.Contains(last, "done in 1s") || !strings.Contains(last, "20 ok / 60 denied") {
				t.Fatalf("the finished bar reads %q; want the time the run took (done in 1s), not the time left", last)
			}
		})
	}
}
