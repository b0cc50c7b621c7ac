package history

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/rate"
)

// FuzzReadChecked fuzzes the body behind a valid checksum, so the fuzzer
// reaches the decoding and validation that a checksum would otherwise guard.
func FuzzReadChecked(f *testing.F) {
	for _, n := range []int{0, 3} {
		var buf bytes.Buffer
		sampleHistory(rand.New(rand.NewPCG(uint64(n), 9)), n).WriteTo(&buf)
		f.Add(buf.Bytes()[:buf.Len()-4])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b := binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, castagnoli))
		h, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i := range h.Len() {
			_ = h.At(i)
		}
	})
}

// splitHistory deals whole's records out to two machines that started at
// different instants and name only the gateways they used.
func splitHistory(whole *History, shiftB time.Duration) (a, b *History) {
	ma, mb := whole.Meta, whole.Meta
	mb.Start = whole.Meta.Start.Add(shiftB)
	ma.Gateways = []string{"g0", "g1"}
	mb.Gateways = []string{"g2", "g1"} // g1 at another index
	mb.Boundaries = nil
	for _, x := range whole.Meta.Boundaries {
		mb.Boundaries = append(mb.Boundaries, x-shiftB)
	}
	mb.Faults = nil
	for _, f := range whole.Meta.Faults {
		f.At -= shiftB
		f.Stopped -= shiftB
		f.Answered -= shiftB
		f.Demoted -= shiftB
		f.Held -= shiftB
		f.Read -= shiftB
		mb.Faults = append(mb.Faults, f)
	}
	a, b = New(ma, 0), New(mb, 0)
	for i := range whole.Len() {
		r := whole.At(i)
		switch r.Gateway {
		case 0:
			a.Append(r)
		case 2:
			r.Gateway = 0
			b.Append(shift(r, -shiftB))
		case 1:
			if i%2 == 0 {
				a.Append(r)
			} else {
				r.Gateway = 1
				b.Append(shift(r, -shiftB))
			}
		}
	}
	return a, b
}

func shift(r Record, d time.Duration) Record {
	r.Intended += d
	for _, t := range []*time.Duration{&r.Sent, &r.Received, &r.Decided} {
		if *t != NoTime {
			*t += d
		}
	}
	return r
}

func TestMergeHalvesEqualsWhole(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	whole := New(Meta{
		Scenario: "m", Start: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Limit: rate.Limit{Count: 5, Window: time.Second},
		Identities: []string{"u0", "u1", "u2"}, Gateways: []string{"g0", "g1", "g2"}, Endpoints: []string{"e"},
		Boundaries: []time.Duration{time.Second}, BoundarySpan: time.Millisecond,
		Faults: []Fault{{At: time.Second, For: time.Second, Action: "failover", Stopped: 1010 * time.Millisecond, Answered: 1500 * time.Millisecond, Demoted: 2500 * time.Millisecond, Held: 900 * time.Millisecond, Read: 1520 * time.Millisecond}}, Rounds: 2,
	}, 0)
	var at time.Duration
	for range 3000 {
		at += time.Duration(rng.Int64N(int64(time.Millisecond))) + 1 // distinct, so the order is unique
		r := Record{
			Intended: at, Sent: at + time.Duration(rng.Int64N(1e5)), Decided: NoTime, RetryAfter: NoTime,
			Identity: rng.Uint32N(3), Round: NoRound, Gateway: uint16(rng.IntN(3)),
			Outcome: decision.Outcome(1 + rng.IntN(4)), By: decision.ByRedis,
		}
		r.Received = r.Sent + time.Duration(rng.Int64N(3e8))
		whole.Append(r)
	}
	for _, shiftB := range []time.Duration{0, 7*time.Millisecond + 3, -time.Second} {
		a, b := splitHistory(whole, shiftB)
		for _, order := range [][]*History{{a, b}, {b, a}} {
			got, err := Merge(order...)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Meta.Start.Equal(whole.Meta.Start) && shiftB >= 0 {
				t.Fatalf("merged Start = %v, want %v", got.Meta.Start, whole.Meta.Start)
			}
			// Re-express the merged records on whole's clock and names.
			base := got.Meta.Start.Sub(whole.Meta.Start)
			if got.Len() != whole.Len() {
				t.Fatalf("merged %d records, want %d", got.Len(), whole.Len())
			}
			for i := range whole.Len() {
				r := shift(got.At(i), base)
				r.Gateway = uint16(indexOf(whole.Meta.Gateways, got.Meta.Gateways[r.Gateway]))
				if w := whole.At(i); r != w {
					t.Fatalf("shift %v: record %d = %+v, want %+v", shiftB, i, r, w)
				}
			}
			if len(got.Meta.Faults) != 1 || got.Meta.Faults[0].At+base != time.Second {
				t.Fatalf("merged faults = %+v, want the one fault at 1s on the whole's clock", got.Meta.Faults)
			}
			// Its other offsets move with it.
			f, w := got.Meta.Faults[0], whole.Meta.Faults[0]
			if f.Stopped+base != w.Stopped || f.Answered+base != w.Answered || f.Demoted+base != w.Demoted || f.Held+base != w.Held || f.Read+base != w.Read {
				t.Fatalf("shift %v: merged fault %+v, want %+v on the whole's clock", shiftB, f, w)
			}
			if len(got.Meta.Boundaries) != 1 || got.Meta.Boundaries[0]+base != time.Second {
				t.Fatalf("merged boundaries = %v", got.Meta.Boundaries)
			}
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// A fault recorded by one machine only keeps every offset of it on the
// merge's clock: when, how long, the election's ends, the lag's start and
// the counters' reading, all moved by that machine's start.
func TestMergeMovesAFaultSeenByOneMachine(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	first := Meta{Scenario: "s", Start: t0, Limit: rate.Limit{Count: 1, Window: time.Second}}
	late := first
	late.Start = t0.Add(250 * ms)
	f := Fault{At: time.Second, Planned: time.Second, Action: "failover", Stopped: 1010 * ms, Answered: 1500 * ms, Demoted: 1700 * ms, Held: 10 * ms, Read: 1520 * ms}
	late.Faults = []Fault{f}
	m, err := Merge(New(first, 0), New(late, 0))
	if err != nil {
		t.Fatal(err)
	}
	d := late.Start.Sub(m.Meta.Start)
	want := Fault{At: f.At + d, Planned: f.Planned, Action: f.Action, Stopped: f.Stopped + d, Answered: f.Answered + d, Demoted: f.Demoted + d, Held: f.Held + d, Read: f.Read + d}
	if len(m.Meta.Faults) != 1 || m.Meta.Faults[0] != want {
		t.Errorf("merged faults %+v, want %+v", m.Meta.Faults, want)
	}
}

func TestMergeRejectsMismatch(t *testing.T) {
	t.Parallel()
	l := rate.Limit{Count: 5, Window: time.Second}
	tests := []struct {
		name string
		hs   []*History
		want string
	}{
		{"none", nil, "nothing to merge"},
		{"nil", []*History{New(Meta{}, 0), nil}, "nil"},
		{"scenario", []*History{New(Meta{Scenario: "a", Limit: l}, 0), New(Meta{Scenario: "b", Limit: l}, 0)}, "scenario"},
		{"limit", []*History{New(Meta{Scenario: "a", Limit: l}, 0), New(Meta{Scenario: "a", Limit: rate.Limit{Count: 6, Window: time.Second}}, 0)}, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Merge(tt.hs...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Merge error = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// A machine whose clock ran ahead is moved back onto the reference's time
// line by its measured offset; its send-receive intervals widen by the
// offset's uncertainty; the target's decision times, read on the
// reference's clock, keep their instant; a segment's rounds add up.
func TestMergeMovesClocksOntoTheReference(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	const ahead, unc = 100 * time.Millisecond, time.Millisecond
	meta := Meta{Scenario: "s", Limit: rate.Limit{Count: 1, Window: time.Second}, Identities: []string{"u"}, Gateways: []string{"g"}, Endpoints: []string{"e"}}
	ma, mb := meta, meta
	ma.Start, ma.Segment, ma.Rounds = t0, "0:1/2", 2
	ma.Clock = Clock{Reference: "redis TIME"}
	// Both started at t0 on the reference; b's clock read t0+100ms then.
	mb.Start, mb.Segment, mb.Rounds = t0.Add(ahead), "1/2:1", 3
	mb.Clock = Clock{Offset: ahead, Uncertainty: unc, Reference: "redis TIME"}
	rec := func(decided time.Duration) Record {
		return Record{Intended: 10 * time.Millisecond, Sent: 10 * time.Millisecond, Received: 12 * time.Millisecond,
			Decided: decided, RetryAfter: NoTime, Round: NoRound, Outcome: decision.Allowed}
	}
	a, b := New(ma, 1), New(mb, 1)
	a.Append(rec(11 * time.Millisecond))
	// The clock, segment, lateness and the wall clock's move survive the
	// file.
	mb.Late, mb.WallMoved, mb.RedisMoved = 3*time.Microsecond, -25*time.Millisecond, 40*time.Millisecond
	var buf bytes.Buffer
	if _, err := New(mb, 0).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if back, err := Read(&buf); err != nil || back.Meta.Clock != mb.Clock || back.Meta.Segment != mb.Segment || back.Meta.Late != mb.Late || back.Meta.WallMoved != mb.WallMoved || back.Meta.RedisMoved != mb.RedisMoved {
		t.Fatalf("read back %+v, %v; want clock %+v, segment %s, late %v, wall moved %v, redis moved %v", back.Meta, err, mb.Clock, mb.Segment, mb.Late, mb.WallMoved, mb.RedisMoved)
	}
	// The target decided b's request at t0+11ms on its clock: 89ms before
	// b's own start reading.
	b.Append(rec(11*time.Millisecond - ahead))
	a.Meta.WallMoved, b.Meta.WallMoved = 2*time.Millisecond, mb.WallMoved
	a.Meta.RedisMoved, b.Meta.RedisMoved = -60*time.Millisecond, mb.RedisMoved
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Meta.WallMoved != mb.WallMoved {
		t.Errorf("merged wall clock move %v, want the larger, %v", m.Meta.WallMoved, mb.WallMoved)
	}
	if m.Meta.RedisMoved != a.Meta.RedisMoved {
		t.Errorf("merged Redis clock move %v, want the larger, %v", m.Meta.RedisMoved, a.Meta.RedisMoved)
	}
	if !m.Meta.Start.Equal(t0) || m.Meta.Rounds != 5 || m.Meta.Clock.Reference != "redis TIME" || m.Meta.Clock.Offset != 0 {
		t.Fatalf("merged meta: start %v, rounds %d, clock %+v; want %v, 5, on redis TIME", m.Meta.Start, m.Meta.Rounds, m.Meta.Clock, t0)
	}
	want := []Record{rec(11 * time.Millisecond), rec(11 * time.Millisecond)}
	want[1].Sent -= unc
	want[1].Received += unc
	for i, w := range want {
		if got := m.At(i); got != w {
			t.Fatalf("record %d: %+v; want %+v", i, got, w)
		}
	}
}

// TestMergeShards checks that each identity keeps its shard through a
// merge whose inputs list identities in different orders, and that a
// history without shards leaves its own identities' shards unknown ("").
func TestMergeShards(t *testing.T) {
	t.Parallel()
	lim := rate.Limit{Count: 1, Window: time.Second}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := New(Meta{Scenario: "s", Start: start, Limit: lim, Identities: []string{"u0", "u1"}, Shards: []string{"n1", "n2"},
		Faults: []Fault{{At: time.Second, Action: "failover", Shard: "n1"}}}, 0)
	b := New(Meta{Scenario: "s", Start: start, Limit: lim, Identities: []string{"u2", "u1"}, Shards: []string{"n3", "n2"},
		Faults: []Fault{{At: time.Second, Action: "failover", Shard: "n1"}}}, 0)
	c := New(Meta{Scenario: "s", Start: start, Limit: lim, Identities: []string{"u3"}}, 0)
	got, err := Merge(a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"u0": "n1", "u1": "n2", "u2": "n3", "u3": ""}
	if len(got.Meta.Shards) != len(got.Meta.Identities) {
		t.Fatalf("merged %d shards for %d identities", len(got.Meta.Shards), len(got.Meta.Identities))
	}
	for i, id := range got.Meta.Identities {
		if got.Meta.Shards[i] != want[id] {
			t.Errorf("identity %s: shard %q, want %q", id, got.Meta.Shards[i], want[id])
		}
	}
	if len(got.Meta.Faults) != 1 || got.Meta.Faults[0].Shard != "n1" {
		t.Errorf("merged faults = %+v, want one failover of shard n1", got.Meta.Faults)
	}
	none, err := Merge(c)
	if err != nil {
		t.Fatal(err)
	}
	if none.Meta.Shards != nil {
		t.Errorf("a merge of histories without shards has shards %q", none.Meta.Shards)
	}
}

// TestReadRefusesShardCount checks that a file whose shards do not match
// its identities one for one is refused, not read with shards misplaced.
func TestReadRefusesShardCount(t *testing.T) {
	t.Parallel()
	h := New(Meta{Scenario: "s", Identities: []string{"u0", "u1"}, Shards: []string{"n1"}}, 0)
	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(&buf); !errors.Is(err, ErrFormat) {
		t.Fatalf("Read = %v, want ErrFormat", err)
	}
}

// TestMergeSpilledEqualsMerge merges the same two machines' histories in
// memory and streamed, with one input spilled and the other a saved file
// read in place: the same Meta and the same records (in input order rather
// than sorted), the merge itself spilling past its Keep.
func TestMergeSpilledEqualsMerge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(13, 14))
	whole := New(Meta{
		Scenario: "m", Start: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Limit: rate.Limit{Count: 5, Window: time.Second},
		Identities: []string{"u0", "u1", "u2"}, Gateways: []string{"g0", "g1", "g2"}, Endpoints: []string{"e"},
		Faults: []Fault{{At: time.Second, For: time.Second, Action: "failover"}}, Rounds: 2,
	}, 0)
	var at time.Duration
	for range 5000 {
		at += time.Duration(rng.Int64N(int64(time.Millisecond))) + 1
		r := Record{
			Intended: at, Sent: at + time.Duration(rng.Int64N(1e5)), Decided: NoTime, RetryAfter: NoTime,
			Identity: rng.Uint32N(3), Round: NoRound, Gateway: uint16(rng.IntN(3)),
			Outcome: decision.Outcome(1 + rng.IntN(4)), By: decision.ByRedis,
		}
		r.Received = r.Sent + time.Duration(rng.Int64N(3e8))
		if rng.IntN(4) == 0 {
			r.Decided = r.Sent + 5
		}
		whole.Append(r)
	}
	a, b := splitHistory(whole, 7*time.Millisecond+3)
	b.Meta.Clock = Clock{Offset: 2 * time.Millisecond, Uncertainty: 300 * time.Microsecond, Reference: "redis TIME"}

	// a spills to disk; b is saved and read back in place.
	aSp := New(a.Meta, 0)
	if err := aSp.Spill(SpillOptions{Dir: dir, Keep: 600, Chunk: testChunk}); err != nil {
		t.Fatal(err)
	}
	for i := range a.Len() {
		aSp.Append(a.At(i))
	}
	defer aSp.Close()
	path := filepath.Join(dir, "b.rlh")
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	bDisk, err := OpenFile(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer bDisk.Close()
	if !aSp.Spilled() || !bDisk.Spilled() {
		t.Fatal("the inputs should be on disk")
	}
	if _, err := Merge(aSp, bDisk); err == nil {
		t.Error("Merge took a spilled history")
	}

	want, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MergeSpilled(SpillOptions{Dir: dir, Keep: 1000, Chunk: testChunk}, aSp, bDisk)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Spilled() {
		t.Error("a merge past its Keep should spill")
	}
	if !reflect.DeepEqual(got.Meta, want.Meta) {
		t.Errorf("meta:\n got %+v\nwant %+v", got.Meta, want.Meta)
	}
	g, w := chunkRecords(t, got), chunkRecords(t, want)
	if len(g) != len(w) {
		t.Fatalf("merged %d records, want %d", len(g), len(w))
	}
	byIntended := func(x, y Record) int { return cmp.Compare(x.Intended, y.Intended) }
	slices.SortFunc(g, byIntended)
	if !slices.Equal(g, w) {
		for i := range g {
			if g[i] != w[i] {
				t.Fatalf("record %d (by Intended): %+v, want %+v", i, g[i], w[i])
			}
		}
	}
	if err := got.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMergeJoinsOneFaultAppliedOnEachMachine: each machine applies a
// planned fault itself, a few milliseconds apart; the merge shows one fault
// spanning both (an instant stays an instant, at the earliest), while
// another action, another planned fault of the same action, or one far
// later stays apart. The planned offset survives the file.
func TestMergeJoinsOneFaultAppliedOnEachMachine(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	meta := Meta{Scenario: "s", Start: t0, Limit: rate.Limit{Count: 1, Window: time.Second}}
	a, b := meta, meta
	ms := time.Millisecond
	a.Faults = []Fault{
		{At: time.Second + 2*ms, For: time.Second, Planned: time.Second, Action: "redis-down"},
		{At: 3*time.Second + 1*ms, Planned: 3 * time.Second, Action: "failover", Stopped: 3010 * ms, Answered: 3500 * ms, Demoted: 5 * time.Second, Held: 2003 * ms, Read: 3520 * ms},
		{At: 6 * time.Second, Planned: 6 * time.Second, Action: "redis-reset"},
	}
	b.Faults = []Fault{
		{At: time.Second + 5*ms, For: time.Second + ms, Planned: time.Second, Action: "redis-down"},
		{At: time.Second + 5*ms, For: time.Second, Planned: time.Second, Action: "redis-latency"},
		{At: 3*time.Second + 240*ms, Planned: 3 * time.Second, Action: "failover", Stopped: 3005 * ms, Answered: 3600 * ms, Demoted: 4800 * ms, Held: 2001 * ms, Read: 3610 * ms},
		{At: 3*time.Second + 300*ms, Planned: 3300 * ms, Action: "failover"},
		{At: 9 * time.Second, Planned: 6 * time.Second, Action: "redis-reset"},
	}
	var buf bytes.Buffer
	if _, err := New(b, 0).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf)
	if err != nil || !slices.Equal(back.Meta.Faults, b.Faults) {
		t.Fatalf("faults read back %+v, %v; want %+v", back.Meta.Faults, err, b.Faults)
	}
	m, err := Merge(New(a, 0), back)
	if err != nil {
		t.Fatal(err)
	}
	want := []Fault{
		{At: time.Second + 2*ms, For: time.Second + 4*ms, Planned: time.Second, Action: "redis-down"},
		{At: time.Second + 5*ms, For: time.Second, Planned: time.Second, Action: "redis-latency"},
		{At: 3*time.Second + 1*ms, Planned: 3 * time.Second, Action: "failover", Stopped: 3005 * ms, Answered: 3600 * ms, Demoted: 5 * time.Second, Held: 2001 * ms, Read: 3610 * ms},
		{At: 3*time.Second + 300*ms, Planned: 3300 * ms, Action: "failover"},
		{At: 6 * time.Second, Planned: 6 * time.Second, Action: "redis-reset"},
		{At: 9 * time.Second, Planned: 6 * time.Second, Action: "redis-reset"},
	}
	if !slices.Equal(m.Meta.Faults, want) {
		t.Errorf("merged faults\n %+v\nwant\n %+v", m.Meta.Faults, want)
	}
}
