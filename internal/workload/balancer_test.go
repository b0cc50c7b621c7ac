package workload

import (
	"testing"
)

func TestRoundRobinVisitsEveryGateway(t *testing.T) {
	t.Parallel()
	const n = 5
	b, err := NewBalancer(SpreadRoundRobin, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	firsts := map[int]bool{}
	for id := uint32(0); id < n; id++ {
		seen := map[int]bool{}
		for seq := uint64(0); seq < n; seq++ {
			seen[b.Pick(id, seq)] = true
		}
		if len(seen) != n {
			t.Fatalf("identity %d visited %d gateways in %d requests, want all %d", id, len(seen), n, n)
		}
		firsts[b.Pick(id, 0)] = true
	}
	if len(firsts) != n {
		t.Fatalf("identities start at %d distinct gateways, want %d", len(firsts), n)
	}
}

func TestStickyKeepsAnIdentityOnOneGateway(t *testing.T) {
	t.Parallel()
	const n = 7
	b, err := NewBalancer(SpreadSticky, n, 42)
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for id := uint32(0); id < 200; id++ {
		g := b.Pick(id, 0)
		for seq := uint64(1); seq < 20; seq++ {
			if b.Pick(id, seq) != g {
				t.Fatalf("identity %d moved from gateway %d", id, g)
			}
		}
		used[g] = true
	}
	if len(used) != n {
		t.Fatalf("200 identities landed on %d gateways, want all %d", len(used), n)
	}
}

func TestRandomIsSeededAndUniform(t *testing.T) {
	t.Parallel()
	const n, draws = 5, 20000
	a, _ := NewBalancer(SpreadRandom, n, 7)
	same, _ := NewBalancer(SpreadRandom, n, 7)
	other, _ := NewBalancer(SpreadRandom, n, 8)
	counts := make([]int, n)
	differs := 0
	for seq := uint64(0); seq < draws; seq++ {
		id := uint32(seq % 13)
		g := a.Pick(id, seq)
		if g != same.Pick(id, seq) {
			t.Fatalf("same seed, different pick at seq %d", seq)
		}
		if g != other.Pick(id, seq) {
			differs++
		}
		counts[g]++
	}
	if differs < draws/2 {
		t.Fatalf("another seed changed only %d of %d picks", differs, draws)
	}
	for g, c := range counts {
		if c < draws/n*85/100 || c > draws/n*115/100 {
			t.Fatalf("gateway %d got %d of %d picks, want about %d", g, c, draws, draws/n)
		}
	}
}

func TestNewBalancerErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spread string
		n      int
	}{{"round-robin", 0}, {"sticky", -1}, {"scatter", 3}} {
		if _, err := NewBalancer(c.spread, c.n, 0); err == nil {
			t.Errorf("NewBalancer(%q, %d) succeeded", c.spread, c.n)
		}
	}
}

func FuzzBalancer(f *testing.F) {
	f.Add("round-robin", 3, int64(1), uint32(2), uint64(9))
	f.Add("random", 50, int64(-5), uint32(0), uint64(1<<63))
	f.Add("sticky", 1, int64(0), uint32(1<<31), uint64(0))
	f.Fuzz(func(t *testing.T, spread string, n int, seed int64, id uint32, seq uint64) {
		b, err := NewBalancer(spread, n, seed)
		if err != nil {
			return
		}
		if g := b.Pick(id, seq); g < 0 || g >= n {
			t.Fatalf("%s over %d gateways picked %d", spread, n, g)
		}
	})
}
