package keyspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pagesOf is a fetch over n pages of one key each, cursors 0 to n-1.
func pagesOf(n int) func(ctx context.Context, cursor uint64) ([]string, bool, uint64, error) {
	return func(ctx context.Context, cursor uint64) ([]string, bool, uint64, error) {
		next := cursor + 1
		if next == uint64(n) {
			next = 0
		}
		return []string{fmt.Sprint(cursor)}, true, next, nil
	}
}

// Two workers see every page once, two at a time at most, and at some
// point two at once.
func TestScanPagesConcurrently(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	var now, most atomic.Int32
	err := scanPages(context.Background(), pagesOf(200), 2, func(p []string) error {
		n := now.Add(1)
		defer now.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(200 * time.Microsecond)
		mu.Lock()
		seen = append(seen, p...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	if len(seen) != 200 || len(slices.Compact(slices.Clone(seen))) != 200 {
		t.Fatalf("saw %d pages, %d distinct; want each of 200 once", len(seen), len(slices.Compact(slices.Clone(seen))))
	}
	if m := most.Load(); m != 2 {
		t.Errorf("at most %d pages at once, want 2", m)
	}
}

// The first error ends the walk: it is returned, and no page is handed
// over after scanPages returns.
func TestScanPagesConcurrentlyStopsAtAnError(t *testing.T) {
	t.Parallel()
	bad := errors.New("bad page")
	var returned atomic.Bool
	var late atomic.Int32
	err := scanPages(context.Background(), pagesOf(1000), 2, func(p []string) error {
		if returned.Load() {
			late.Add(1)
		}
		if p[0] == "10" {
			return bad
		}
		time.Sleep(100 * time.Microsecond)
		return nil
	})
	returned.Store(true)
	if !errors.Is(err, bad) {
		t.Fatalf("error %v, want the page's", err)
	}
	time.Sleep(20 * time.Millisecond)
	if n := late.Load(); n > 0 {
		t.Errorf("%d pages handed over after scanPages returned", n)
	}
}

// A sample is the first n names by name, whatever order they came in.
func TestSamplerKeepsTheFirstByName(t *testing.T) {
	names := []string{"k5", "k1", "k9", "k3", "k7", "k2", "k8", "k3"}
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}, {2, 4, 6, 0, 1, 3, 5, 7}} {
		s := sampler{n: 3}
		for _, i := range order {
			s.add(names[i])
		}
		if want := []string{"k1", "k2", "k3"}; !slices.Equal(s.names, want) || s.count != 8 {
			t.Errorf("order %v: kept %v of %d, want %v of 8", order, s.names, s.count, want)
		}
	}
}
