package analysis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortTimesMatchesSlicesSort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8, 8))
	shapes := map[string]func(i, n int) int64{
		"uniform":       func(i, n int) int64 { return rng.Int64N(1 << 40) },
		"nearly sorted": func(i, n int) int64 { return int64(i)*10_000 + rng.Int64N(2_000_000) },
		"few values":    func(i, n int) int64 { return rng.Int64N(3) },
		"one spike":     func(i, n int) int64 { return []int64{5, 5, 5, -1 << 60, 1 << 60}[rng.IntN(5)] },
		"negative":      func(i, n int) int64 { return -rng.Int64N(1 << 20) },
		"reversed":      func(i, n int) int64 { return int64(n - i) },
	}
	for name, gen := range shapes {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{0, 1, 5, flagSortMin - 1, flagSortMin, 3*flagSortMin + 7, 50_000} {
				s := make([]int64, n)
				for i := range s {
					s[i] = gen(i, n)
				}
				want := slices.Clone(s)
				slices.Sort(want)
				sortTimes(s)
				if !slices.Equal(s, want) {
					t.Fatalf("n=%d: sortTimes differs from slices.Sort", n)
				}
			}
		})
	}
}

func FuzzSortTimes(f *testing.F) {
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := make([]int64, flagSortMin+len(b))
		for i := range s {
			if len(b) == 0 {
				s[i] = int64(i % 7)
				continue
			}
			s[i] = int64(b[i%len(b)]) << (i % 50) // spread and repeat
		}
		want := slices.Clone(s)
		slices.Sort(want)
		sortTimes(s)
		if !slices.Equal(s, want) {
			t.Fatal("sortTimes differs from slices.Sort")
		}
	})
}

func BenchmarkSortTimes(b *testing.B) {
	for _, n := range []int{5_000, 5_000_000} {
		rng := rand.New(rand.NewPCG(1, 2))
		src := make([]int64, n)
		for i := range src {
			src[i] = int64(i)*20_000 + rng.Int64N(2_000_000) // nearly sorted, like Received
		}
		s := make([]int64, len(src))
		for _, bc := range []struct {
			name string
			sort func([]int64)
		}{{"flag", sortTimes}, {"pdq", slices.Sort[[]int64]}} {
			b.Run(fmt.Sprintf("%s-%d", bc.name, n), func(b *testing.B) {
				for b.Loop() {
					copy(s, src)
					bc.sort(s)
				}
			})
		}
	}
}
