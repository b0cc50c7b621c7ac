package rundir

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/threshold"
)

// soakRecord is record i of a soak run every 200µs over 3 identities and
// 2 gateways: about half denied, some errors, some decision times ahead of
// rlctl's clock, and an unplanned outage (fail-open) from record 2000 to
// 2100.
func soakRecord(rng *rand.Rand, i int) history.Record {
	at := time.Duration(i) * 200 * time.Microsecond
	r := history.Record{
		Intended: at, Sent: at + 10*time.Microsecond, Received: at + time.Duration(300+rng.IntN(900))*time.Microsecond,
		Decided: history.NoTime, RetryAfter: history.NoTime, Identity: uint32(rng.IntN(3)), Round: history.NoRound,
		Gateway: uint16(rng.IntN(2)), Outcome: decision.Allowed, By: decision.ByRedis,
	}
	switch k := rng.IntN(20); {
	case k < 10:
		r.Outcome, r.RetryAfter = decision.Denied, 50*time.Millisecond
	case k == 10:
		r.Outcome, r.By = decision.Error, decision.ByUnanswered
	case k < 14:
		r.Decided = r.Sent + 5*time.Millisecond // a clock ahead of rlctl's
	}
	if i > 2000 && i < 2100 {
		r.Outcome, r.By = decision.Allowed, decision.ByFailOpen // an unplanned outage
	}
	return r
}

// TestScoreOfSpilledHistory: a soak run's history, spilled to disk, scores
// to the very report its in-memory twin does - figures, verdict, outages
// and notes - and gets the same note on its decision times' clock.
func TestScoreOfSpilledHistory(t *testing.T) {
	t.Parallel()
	limit := rate.Limit{Count: 20, Window: 100 * time.Millisecond}
	meta := history.Meta{Scenario: "soak", Limit: limit, Identities: []string{"a", "b", "c"}, Gateways: []string{"g0", "g1"}}
	mem := history.New(meta, 0)
	sp := history.New(meta, 0)
	if err := sp.Spill(history.SpillOptions{Dir: t.TempDir(), Keep: 100, Chunk: 64}); err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	rng := rand.New(rand.NewPCG(1, 15))
	for i := range 5000 {
		r := soakRecord(rng, i)
		mem.Append(r)
		sp.Append(r)
	}
	if !sp.Spilled() {
		t.Fatal("the history did not spill")
	}
	s := soakSaved(t, limit)
	want, err := Score(mem, s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Score(sp, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Outages) == 0 || len(want.Notes) == 0 {
		t.Fatalf("the in-memory report shows no outage or note: %+v", want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("spilled history scored\n%+v\nin memory\n%+v", got, want)
	}
	if !slices.ContainsFunc(want.Notes, func(n string) bool { return strings.Contains(n, "decision times run") }) {
		t.Fatalf("no note of the target's clock: %q", want.Notes)
	}
}

// TestRenderReadsLongHistoriesInPlace: a saved run whose history is longer
// than what render keeps in memory is re-scored from the file in place,
// a chunk at a time, to the very report reading it whole gives.
func TestRenderReadsLongHistoriesInPlace(t *testing.T) {
	t.Parallel()
	limit := rate.Limit{Count: 20, Window: 100 * time.Millisecond}
	meta := history.Meta{Scenario: "soak", Limit: limit, Identities: []string{"a", "b", "c"}, Gateways: []string{"g0", "g1"}, Workers: 8}
	n := 2*history.ChunkLen + 500
	h := history.New(meta, n)
	rng := rand.New(rand.NewPCG(4, 15))
	for i := range n {
		r := soakRecord(rng, i)
		if i%7 == 0 {
			r.Sent, r.Received, r.Decided, r.RetryAfter = history.NoTime, history.NoTime, history.NoTime, history.NoTime
			r.Outcome, r.By = decision.Dropped, 0
		}
		h.Append(r)
	}
	s := soakSaved(t, limit)
	dir := saveRun(t, h, s)
	whole, err := openRunDir(dir, math.MaxInt)
	if err != nil {
		t.Fatal(err)
	}
	inPlace, err := openRunDir(dir, history.ChunkLen)
	if err != nil {
		t.Fatal(err)
	}
	defer inPlace.Close()
	if whole.History["soak"].Spilled() || !inPlace.History["soak"].Spilled() {
		t.Fatalf("spilled: whole %v, in place %v", whole.History["soak"].Spilled(), inPlace.History["soak"].Spilled())
	}
	want, _, err := Rescore([]*SavedRun{whole}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := Rescore([]*SavedRun{inPlace}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want.Scenarios[0].Metrics["dropped"] == 0 || len(want.Scenarios[0].Notes) == 0 {
		t.Fatalf("the report shows no drops or notes: %+v", want.Scenarios[0])
	}
	// The drop note's offered rate and service time are means that a
	// history read a chunk at a time estimates per chunk (see
	// analysis.ExplainDrops), as it does for a run that spilled: the note
	// is there, and everything else is the same.
	note := fmt.Sprintf("%.0f requests were dropped: all 8 workers", want.Scenarios[0].Metrics["dropped"])
	for _, r := range []*report.Report{got, want} {
		sc := &r.Scenarios[0]
		i := slices.IndexFunc(sc.Notes, func(n string) bool { return strings.HasPrefix(n, note) })
		if i < 0 {
			t.Fatalf("no drop note: %q", sc.Notes)
		}
		sc.Notes = slices.Delete(sc.Notes, i, i+1)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read in place\n%+v\nread whole\n%+v", got, want)
	}
}

// TestMergeReadsLongHistoriesInPlace: two machines' saved runs, too long to
// hold, are merged from their files read in place (streamed into a merge
// that keeps record order per machine rather than sorting) to the very
// report and saved history that merging them whole gives.
func TestMergeReadsLongHistoriesInPlace(t *testing.T) {
	t.Parallel()
	limit := rate.Limit{Count: 20, Window: 100 * time.Millisecond}
	s := soakSaved(t, limit)
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	n := history.ChunkLen + 300
	var dirs []string
	for m, start := range []time.Time{t0, t0.Add(7 * time.Millisecond)} {
		meta := history.Meta{Scenario: "soak", Start: start, Limit: limit, Identities: []string{"a", "b", "c"},
			Gateways: []string{fmt.Sprintf("m%d-g0", m), fmt.Sprintf("m%d-g1", m)}, Segment: []string{"0:1/2", "1/2:1"}[m]}
		h := history.New(meta, n)
		rng := rand.New(rand.NewPCG(uint64(m), 16))
		for i := range n {
			h.Append(soakRecord(rng, i))
		}
		dirs = append(dirs, saveRun(t, h, s))
	}
	var whole, inPlace []*SavedRun
	for _, d := range dirs {
		w, err := openRunDir(d, math.MaxInt)
		if err != nil {
			t.Fatal(err)
		}
		p, err := openRunDir(d, history.ChunkLen)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if !p.History["soak"].Spilled() {
			t.Fatal("the history was read whole")
		}
		whole, inPlace = append(whole, w), append(inPlace, p)
	}
	wantDir, gotDir := &RunDir{Path: t.TempDir()}, &RunDir{Path: t.TempDir()}
	want, _, err := Rescore(whole, wantDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := Rescore(inPlace, gotDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want.Scenarios[0].Metrics["requests"] != float64(2*n) || len(want.Scenarios[0].Outages) == 0 {
		t.Fatalf("the merged report: %+v", want.Scenarios[0])
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged in place\n%+v\nmerged whole\n%+v", got, want)
	}
	// The saved merges hold the same records, in another order.
	records := func(d *RunDir) []history.Record {
		h, err := history.OpenFile(filepath.Join(d.Path, HistoriesDir, "soak.rlh"), math.MaxInt)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]history.Record, h.Len())
		for i := range out {
			out[i] = h.At(i)
		}
		slices.SortFunc(out, func(a, b history.Record) int {
			return cmp.Or(cmp.Compare(a.Intended, b.Intended), cmp.Compare(a.Gateway, b.Gateway))
		})
		return out
	}
	if g, w := records(gotDir), records(wantDir); !slices.Equal(g, w) {
		t.Errorf("saved merges differ: %d and %d records", len(g), len(w))
	}
}

// soakSaved is how the soak tests score a history: the Lua fixed window at
// limit, held to 1.5 × limit.
func soakSaved(t *testing.T, limit rate.Limit) Saved {
	t.Helper()
	th, err := threshold.Parse("ceiling <= 1.5 * limit")
	if err != nil {
		t.Fatal(err)
	}
	return Saved{Name: "soak", Algorithm: design.RedisFixedWindow, Limit: limit, Thresholds: []threshold.Threshold{th}}
}

// saveRun saves h, scored with s, as a run directory of its own (history
// and report.json) and returns its path.
func saveRun(t *testing.T, h *history.History, s Saved) string {
	t.Helper()
	dir := &RunDir{Path: t.TempDir()}
	if err := dir.SaveHistory(h, s); err != nil {
		t.Fatal(err)
	}
	sc, err := Score(h, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.WriteReport(&report.Report{Started: h.Meta.Start, Scenarios: []report.Scenario{sc}}, []string{"json"}); err != nil {
		t.Fatal(err)
	}
	return dir.Path
}

// TestMergeOfRunsNothingAnsweredIsNoPass: two machines' soak runs in which
// no request was answered, merged from their files read in place, are an
// error, never a PASS, however lenient the threshold.
func TestMergeOfRunsNothingAnsweredIsNoPass(t *testing.T) {
	t.Parallel()
	limit := rate.Limit{Count: 20, Window: 100 * time.Millisecond}
	s := soakSaved(t, limit)
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	n := history.ChunkLen + 300
	var runs []*SavedRun
	for m := range 2 {
		h := history.New(history.Meta{Scenario: "soak", Start: t0, Limit: limit, Identities: []string{"a"}, Gateways: []string{fmt.Sprintf("m%d", m)},
			Segment: []string{"0/2", "1/2"}[m]}, n)
		for i := range n {
			at := time.Duration(i) * 200 * time.Microsecond
			h.Append(history.Record{Intended: at, Sent: at, Received: at + time.Millisecond, Decided: history.NoTime, RetryAfter: history.NoTime,
				Round: history.NoRound, Outcome: decision.Error, By: decision.ByUnanswered})
		}
		rd, err := openRunDir(saveRun(t, h, s), history.ChunkLen)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		if !rd.History["soak"].Spilled() {
			t.Fatal("the history was read whole")
		}
		runs = append(runs, rd)
	}
	rep, code, err := Rescore(runs, &RunDir{Path: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc := rep.Scenarios[0]; sc.Status != score.StatusError || sc.Metrics["requests"] != float64(2*n) {
		t.Fatalf("merged runs with nothing answered: status %s, %g requests; want an error over %d", sc.Status, sc.Metrics["requests"], 2*n)
	}
	if code == 0 {
		t.Error("the merged report exits 0")
	}
}
