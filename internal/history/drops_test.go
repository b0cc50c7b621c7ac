package history

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
)

// TestDropsTallyEveryDrop adds drops in order and out of order: every one
// is counted by identity, gateway, endpoint and time, and the slices stay
// sorted, disjoint and at most dropSpan wide.
func TestDropsTallyEveryDrop(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var d Drops
	want := map[int]int64{}
	var at time.Duration
	for k := range 20000 {
		at += time.Duration(rng.Int64N(int64(time.Millisecond)))
		when := at
		if k%50 == 0 { // now and then one late in the schedule's order
			when = max(0, at-time.Duration(rng.Int64N(int64(time.Second))))
		}
		id := rng.IntN(7)
		want[id]++
		d.Add(when, uint32(id), uint16(rng.IntN(3)), uint8(rng.IntN(2)))
	}
	if err := d.Check(7, 3, 2); err != nil {
		t.Fatal(err)
	}
	if d.Total() != 20000 {
		t.Fatalf("Total = %d, want 20000", d.Total())
	}
	for id, n := range want {
		if d.Identity[id] != n {
			t.Fatalf("identity %d: %d drops, want %d", id, d.Identity[id], n)
		}
	}
	for _, s := range d.Slices {
		if s.To-s.From >= dropSpan {
			t.Fatalf("slice [%v, %v] wider than %v", s.From, s.To, dropSpan)
		}
	}
}

// TestDropsCoarsenToStayBounded drops for a long time: the slices stay
// within maxDropSlices and still count every drop.
func TestDropsCoarsenToStayBounded(t *testing.T) {
	t.Parallel()
	var d Drops
	const n = 3 * maxDropSlices
	for k := range n {
		d.Add(time.Duration(k)*20*time.Millisecond, 0, 0, 0)
	}
	if len(d.Slices) > maxDropSlices {
		t.Fatalf("%d slices, want at most %d", len(d.Slices), maxDropSlices)
	}
	if err := d.Check(1, 1, 1); err != nil || d.Total() != n {
		t.Fatalf("after coarsening: %v, total %d of %d", err, d.Total(), n)
	}
}

// TestDropsInTheFile: a history with tallied drops sets flagDrops (an
// older rlctl refuses it rather than count none), and Read refuses a tally
// that does not add up.
func TestDropsInTheFile(t *testing.T) {
	t.Parallel()
	h := sampleHistory(rand.New(rand.NewPCG(5, 6)), 100)
	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if flags := binary.LittleEndian.Uint16(buf.Bytes()[10:]); flags&flagDrops == 0 {
		t.Fatalf("flags %#x: a history with drops must set flagDrops", flags)
	}
	got, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Drops.Total() != 10 {
		t.Fatalf("read back %d drops, want 10", got.Meta.Drops.Total())
	}
	for _, bad := range []Drops{
		{Identity: []int64{2}, Gateway: []int64{1}, Endpoint: []int64{1}, Slices: []DropSlice{{Count: 1}}},                             // totals disagree
		{Identity: []int64{0, 0, 1}, Gateway: []int64{1}, Endpoint: []int64{1}, Slices: []DropSlice{{Count: 1}}},                       // unnamed identity
		{Identity: []int64{2}, Gateway: []int64{2}, Endpoint: []int64{2}, Slices: []DropSlice{{From: 5, To: 5, Count: 1}, {Count: 1}}}, // out of order
	} {
		b := New(Meta{Scenario: "s", Identities: []string{"u", "v"}, Gateways: []string{"g"}, Endpoints: []string{"e"}, Drops: bad}, 0)
		var w bytes.Buffer
		if _, err := b.WriteTo(&w); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(&w); !errors.Is(err, ErrFormat) {
			t.Fatalf("drops %+v: Read = %v, want ErrFormat", bad, err)
		}
	}
	// Without drops the file is as before: no flag.
	plain := New(Meta{Scenario: "s"}, 0)
	var w bytes.Buffer
	if _, err := plain.WriteTo(&w); err != nil {
		t.Fatal(err)
	}
	if flags := binary.LittleEndian.Uint16(w.Bytes()[10:]); flags != 0 {
		t.Fatalf("flags %#x without drops or retries, want 0", flags)
	}
}

// TestMergeAddsDropsByName merges two machines' tallies: counts join by
// name whatever each machine's indices, and the slices move onto the
// merge's time line like the records, overlapping ones joined.
func TestMergeAddsDropsByName(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	meta := func(at time.Time, gws ...string) Meta {
		return Meta{Scenario: "m", Start: at, Limit: rate.Limit{Count: 5, Window: time.Second},
			Identities: []string{"u0", "u1"}, Gateways: gws, Endpoints: []string{"e"}}
	}
	a := New(meta(start, "g0", "g1"), 0)
	b := New(meta(start.Add(5*time.Millisecond), "g1"), 0) // 5ms later, g1 at index 0
	for k := range 10 {
		a.Meta.Drops.Add(time.Duration(k)*time.Millisecond, 0, 1, 0) // g1, 0-9ms
		b.Meta.Drops.Add(time.Duration(k)*time.Millisecond, 1, 0, 0) // g1, 5-14ms on a's clock
	}
	a.Meta.Drops.Add(time.Second, 1, 0, 0) // g0
	want := Drops{Identity: []int64{10, 11}, Gateway: []int64{1, 20}, Endpoint: []int64{21},
		Slices: []DropSlice{{From: 0, To: 14 * time.Millisecond, Count: 20}, {From: time.Second, To: time.Second, Count: 1}}}
	spilled, err := MergeSpilled(SpillOptions{Dir: t.TempDir(), Keep: 1}, b, a)
	if err != nil {
		t.Fatal(err)
	}
	defer spilled.Close()
	for _, order := range [][]*History{{a, b}, {b, a}} {
		got, err := Merge(order...)
		if err != nil {
			t.Fatal(err)
		}
		gw := map[string]int64{}
		for k, c := range got.Meta.Drops.Gateway {
			gw[got.Meta.Gateways[k]] = c
		}
		d := got.Meta.Drops
		if gw["g0"] != 1 || gw["g1"] != 20 || d.Total() != 21 || len(d.Slices) != 2 || d.Slices[0] != want.Slices[0] || d.Slices[1] != want.Slices[1] {
			t.Fatalf("merged drops %+v (gateways %v), want %+v", d, got.Meta.Gateways, want)
		}
		if err := d.Check(2, 2, 1); err != nil {
			t.Fatal(err)
		}
	}
	if d := spilled.Meta.Drops; d.Total() != 21 || len(d.Slices) != 2 || d.Slices[0] != want.Slices[0] {
		t.Fatalf("MergeSpilled drops %+v, want %+v", d, want)
	}
}
