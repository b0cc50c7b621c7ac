package redistest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps the failures it is told about
// instead of failing the test, so the assertions themselves can be tested.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) failures() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errors, "\n")
}

// TestSnapshotSeesEveryChange: an untouched seed passes, and each way a
// key can be changed (value, TTL set, removed or set again to the same
// length, deletion) is reported for that key.
func TestSnapshotSeesEveryChange(t *testing.T) {
	srv := Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	snap := SeedForeign(t, c)
	if len(snap.Keys()) < 20 {
		t.Fatalf("only %d keys seeded", len(snap.Keys()))
	}
	time.Sleep(300 * time.Millisecond) // TTLs count down meanwhile
	clean := &recorder{TB: t}
	snap.AssertUnchanged(clean, c)
	if f := clean.failures(); f != "" {
		t.Fatalf("untouched keys reported changed:\n%s", f)
	}

	changes := []struct {
		key    string
		change func() error
		want   string
	}{
		{"rl:fw:notlimiter", func() error { return c.Set(ctx, "rl:fw:notlimiter", "other", 0).Err() }, "value changed"},
		{"rl:config:flags", func() error { return c.Expire(ctx, "rl:config:flags", time.Hour).Err() }, "had no TTL"},
		{"rl:sessions:def", func() error { return c.Persist(ctx, "rl:sessions:def").Err() }, "now has none"},
		{"app:session:1", func() error { return c.Expire(ctx, "app:session:1", foreignTTL).Err() }, "after counting down"},
		{"app:scores", func() error { return c.Expire(ctx, "app:scores", time.Minute).Err() }, "after counting down"},
		{"app:jobs", func() error { return c.Del(ctx, "app:jobs").Err() }, "does not exist"},
	}
	for _, ch := range changes {
		if err := ch.change(); err != nil {
			t.Fatal(err)
		}
	}
	r := &recorder{TB: t}
	snap.AssertUnchanged(r, c)
	got := r.failures()
	for _, ch := range changes {
		if !strings.Contains(got, fmt.Sprintf("key %q: ", ch.key)) || !strings.Contains(got, ch.want) {
			t.Errorf("change of %s not reported as %q:\n%s", ch.key, ch.want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != len(changes) {
		t.Errorf("%d failures, want %d:\n%s", n, len(changes), got)
	}
}

// TestSeedForeignNeverOverwrites: seeding into a Redis that holds one of
// the keys already fails instead of replacing it.
func TestSeedForeignNeverOverwrites(t *testing.T) {
	srv := Start(t)
	c := srv.Client(t)
	if err := c.Set(context.Background(), "app:visits", "mine", 0).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan *fatalRecorder)
	go func() {
		r := &fatalRecorder{TB: t}
		defer func() { done <- r }()
		SeedForeign(r, c)
	}()
	r := <-done
	if !strings.Contains(r.msg, `"app:visits" exists already`) {
		t.Fatalf("seeding over an existing key: %q", r.msg)
	}
	if v := c.Get(context.Background(), "app:visits").Val(); v != "mine" {
		t.Fatalf("existing key overwritten: %q", v)
	}
}

// fatalRecorder records a Fatalf and stops its goroutine, as t.Fatalf
// would.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
