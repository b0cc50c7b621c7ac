package analysis

import (
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
)

// tinyBudget makes a spilled analysis of a few hundred records use every
// path a long run does: many groups, identities alone over the budget
// streamed from disk, sorters merging runs.
var tinyBudget = budget{group: 5, run: 3, block: 48}

// randomSpillRun is a random history with everything the analysis reads:
// identities (some beyond Meta's), gateways, outcomes and deciders, known
// decision times on a shifted clock, long and reversed intervals, rounds,
// boundaries, faults and, sometimes, retries.
func randomSpillRun(rng *rand.Rand) []history.Record {
	n := rng.IntN(300)
	ids := 1 + rng.IntN(6)
	w := int64(1+rng.IntN(50)) * int64(time.Millisecond)
	retries := rng.IntN(3) == 0
	clock := int64(0)
	if rng.IntN(3) == 0 {
		clock = rng.Int64N(int64(100 * time.Millisecond))
	}
	var out []history.Record
	for range n {
		at := rng.Int64N(10 * w)
		sent := at + rng.Int64N(w/4+1)
		recv := sent + rng.Int64N(2*w)
		r := history.Record{
			Intended: time.Duration(at), Sent: time.Duration(sent), Received: time.Duration(recv),
			Decided: history.NoTime, RetryAfter: history.NoTime,
			Identity: uint32(rng.IntN(ids)), Round: history.NoRound, Gateway: uint16(rng.IntN(3)),
			Outcome: decision.Outcome(rng.IntN(5)), By: decision.By(rng.IntN(int(decision.ByUnanswered) + 1)),
		}
		switch rng.IntN(8) {
		case 0:
			r.Decided = time.Duration(sent + (recv-sent)/2 + clock)
		case 1:
			r.Sent, r.Received = r.Received, r.Sent // a clock step
		case 2:
			r.Received = history.NoTime
		case 3:
			r.Identity = 1000 + uint32(rng.IntN(3)) // unnamed
		}
		if r.Outcome == decision.Denied && rng.IntN(2) == 0 {
			r.RetryAfter = time.Duration(rng.Int64N(w))
		}
		if rng.IntN(3) == 0 {
			r.Round = int32(rng.IntN(4))
		}
		if r.Outcome == decision.Dropped {
			r.Sent, r.Received, r.Decided = history.NoTime, history.NoTime, history.NoTime
		}
		if retries && rng.IntN(2) == 0 {
			r.Attempt = uint8(1 + rng.IntN(3))
			r.Told, r.Waited = time.Duration(rng.Int64N(w)), time.Duration(rng.Int64N(w))
			if rng.IntN(4) == 0 {
				r.Waited = r.Told
			}
			if rng.IntN(5) == 0 {
				r.Told = history.NoTime
			}
		}
		out = append(out, r)
	}
	return out
}

func randomSpillMeta(rng *rand.Rand) history.Meta {
	w := time.Duration(1+rng.IntN(50)) * time.Millisecond
	m := history.Meta{Scenario: "spill", Identities: []string{"a", "b", "c", "d", "e", "f"}[:1+rng.IntN(6)], Gateways: []string{"g0", "g1"}}
	if rng.IntN(5) > 0 {
		m.Limit = rate.Limit{Count: int64(1 + rng.IntN(8)), Window: w}
	}
	if rng.IntN(2) == 0 {
		m.Boundaries = []time.Duration{time.Duration(rng.Int64N(int64(10 * w))), time.Duration(rng.Int64N(int64(10 * w)))}
		m.BoundarySpan = time.Duration(rng.Int64N(int64(w)))
	}
	if rng.IntN(2) == 0 {
		m.Rounds = 4
	}
	if rng.IntN(2) == 0 {
		m.Faults = []history.Fault{{At: time.Duration(rng.Int64N(int64(5 * w))), For: w, Action: "redis-down"}}
	}
	for range rng.IntN(3) { // and the election figures, of none, one or two failovers
		m.Faults = append(m.Faults, history.Fault{At: time.Duration(rng.Int64N(int64(5 * w))), Action: "failover"})
	}
	return m
}

// TestSpilledAnalysisEqualsInMemory analyses random histories twice, held
// in memory and spilled to disk in tiny chunks with a tiny budget, and
// wants the very same Result.
func TestSpilledAnalysisEqualsInMemory(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 50))
	dir := t.TempDir()
	runs := 300
	if raceEnabled {
		runs = 40 // the detector slows each tenfold and finds nothing more in many
	}
	for run := range runs {
		meta := randomSpillMeta(rng)
		recs := randomSpillRun(rng)
		mem := history.New(meta, len(recs))
		sp := history.New(meta, 0)
		if err := sp.Spill(history.SpillOptions{Dir: dir, Keep: 1, Chunk: 8}); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			mem.Append(r)
			sp.Append(r)
		}
		opts := Options{}
		if rng.IntN(3) == 0 {
			opts.EnvelopeBurst, opts.EnvelopeRate = float64(1+rng.IntN(5)), float64(rng.IntN(500))
		}
		big := []int{1, parallelSort}[rng.IntN(2)]
		want := mustAnalyze(t, mem, opts, big, spillBudget)
		got := mustAnalyze(t, sp, opts, big, tinyBudget)
		if len(recs) > 8 && !sp.Spilled() {
			t.Fatalf("run %d: %d records did not spill", run, len(recs))
		}
		if !reflect.DeepEqual(got, want) {
			for k, v := range want.Metrics {
				if got.Metrics[k] != v {
					t.Errorf("run %d: %s: spilled %v, in memory %v", run, k, got.Metrics[k], v)
				}
			}
			t.Fatalf("run %d (%d records, retries %v): spilled analysis differs from the in-memory one", run, len(recs), mem.HasRetries())
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("the spill directory keeps %d files after the analyses", len(es))
	}
}

// TestSpilledAnalysisReportsAReadError: a spilled history that cannot be
// read back gives an error, not a panic and not a Result.
func TestSpilledAnalysisReportsAReadError(t *testing.T) {
	dir := t.TempDir()
	h := history.New(history.Meta{Identities: []string{"a"}}, 0)
	if err := h.Spill(history.SpillOptions{Dir: dir, Keep: 1, Chunk: 8}); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		h.Append(history.Record{Intended: time.Duration(i), Sent: time.Duration(i), Received: time.Duration(i + 1), Decided: history.NoTime, RetryAfter: history.NoTime})
	}
	h.Close() // the file is gone
	if _, err := Analyze(h, Options{}); err == nil {
		t.Fatal("analysed a spilled history whose file is gone")
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("the failed analysis left %d files", len(es))
	}
}

// TestTalliedDropsCountAsRecordedOnes analyses random histories twice:
// with their dropped requests as records, and tallied in Meta.Drops as the
// traffic engine keeps them (in memory and spilled). The very same Result:
// a drop counts in its identity's and gateway's figures and the run's span
// either way. (A tally keeps no round, attempt or decider, so only drops
// without them, of named identities, are tallied.)
func TestTalliedDropsCountAsRecordedOnes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(16, 61))
	dir := t.TempDir()
	runs := 200
	if raceEnabled {
		runs = 30
	}
	tallied := 0
	for run := range runs {
		meta := randomSpillMeta(rng)
		recs := randomSpillRun(rng)
		if run%2 == 0 { // an overload: mostly drops
			for i := range recs {
				if rng.IntN(4) > 0 {
					recs[i].Outcome, recs[i].By, recs[i].Round, recs[i].Attempt = decision.Dropped, 0, history.NoRound, 0
					recs[i].Sent, recs[i].Received, recs[i].Decided = history.NoTime, history.NoTime, history.NoTime
				}
			}
		}
		rec := history.New(meta, len(recs))
		mem := history.New(meta, len(recs))
		sp := history.New(meta, 0)
		if err := sp.Spill(history.SpillOptions{Dir: dir, Keep: 1, Chunk: 8}); err != nil {
			t.Fatal(err)
		}
		var drops history.Drops
		for _, r := range recs {
			rec.Append(r)
			if r.Outcome == decision.Dropped && r.By == 0 && r.Round == history.NoRound && r.Attempt == 0 && int(r.Identity) < len(meta.Identities) {
				drops.Add(r.Intended, r.Identity, r.Gateway, r.Endpoint)
				tallied++
				continue
			}
			mem.Append(r)
			sp.Append(r)
		}
		mem.Meta.Drops, sp.Meta.Drops = drops, drops
		want := mustAnalyze(t, rec, Options{}, parallelSort, spillBudget)
		for _, got := range []Result{mustAnalyze(t, mem, Options{}, parallelSort, spillBudget), mustAnalyze(t, sp, Options{}, parallelSort, tinyBudget)} {
			if !reflect.DeepEqual(got, want) {
				for k, v := range want.Metrics {
					if got.Metrics[k] != v {
						t.Errorf("run %d: %s: tallied %v, recorded %v", run, k, got.Metrics[k], v)
					}
				}
				t.Fatalf("run %d (%d records, %d drops tallied): the analysis differs from the one of recorded drops", run, len(recs), drops.Total())
			}
		}
		if a, b := ExplainDrops(rec), ExplainDrops(mem); a.Dropped != b.Dropped || a.Workers != b.Workers && meta.Workers > 0 {
			t.Fatalf("run %d: ExplainDrops recorded %+v, tallied %+v", run, a, b)
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if tallied < 1000 {
		t.Fatalf("only %d drops tallied over %d runs: the test exercises too little", tallied, runs)
	}
}
