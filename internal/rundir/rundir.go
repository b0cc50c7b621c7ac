package rundir

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/workload"
)

// HistoriesDir is the run directory's folder of raw decision records
// (<scenario>.rlh) and what re-scoring each needs (<scenario>.json).
const HistoriesDir = "histories"

// RunDir is one run's directory: its reports and, under HistoriesDir, every
// scenario's history.
type RunDir struct {
	Path string
}

// CreateRunDir makes a new directory for a run under parent, named after
// the run's start (UTC, to the second) and its suite: parent/20261129T221946Z-builtin.
// It is created exclusively, so two runs never share one: a name already
// taken gets a suffix (-2, -3 …). It also checks the directory can be
// written, so a run is never made only to be thrown away at the end.
func CreateRunDir(parent string, started time.Time, suite string) (*RunDir, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("report directory %s: %w", parent, err)
	}
	base := started.UTC().Format("20060102T150405Z") + "-" + SafeName(suite)
	for n := 1; ; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		p := filepath.Join(parent, name)
		err := os.Mkdir(p, 0o755)
		if errors.Is(err, fs.ErrExist) && n < 1000 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("report directory %s: %w", parent, err)
		}
		probe, err := os.CreateTemp(p, ".probe-*")
		if err != nil {
			os.Remove(p)
			return nil, fmt.Errorf("report directory %s cannot be written: %w", p, err)
		}
		probe.Close()
		os.Remove(probe.Name())
		return &RunDir{Path: p}, nil
	}
}

// SafeName makes s usable as a file name on every platform: letters,
// digits, '-', '_' and '.', anything else becomes '-'.
func SafeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, s)
	if s == "" || s == "." || s == ".." {
		return "suite"
	}
	return s
}

// SaveHistory writes a scenario's history and scoring inputs into the run
// directory.
func (d *RunDir) SaveHistory(h *history.History, s Saved) error {
	hd := filepath.Join(d.Path, HistoriesDir)
	if err := os.MkdirAll(hd, 0o755); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	name := SafeName(s.Name)
	if err := h.WriteFile(filepath.Join(hd, name+".rlh")); err != nil {
		return fmt.Errorf("save history of %s: %w", s.Name, err)
	}
	return s.WriteFile(filepath.Join(hd, name+".json"))
}

// WriteReport writes the run's reports in the given formats (see
// report.Formats).
func (d *RunDir) WriteReport(r *report.Report, formats []string) error {
	return report.WriteDir(d.Path, r, formats)
}

// CreateMergeDir makes the directory a merge of runs is written to: a new
// one, created exclusively, so a merge never overwrites a saved run (one
// of its inputs, or any other) and two merges never share one. It may not
// lie inside one of the runs either.
func CreateMergeDir(path string, runs []*SavedRun) (*RunDir, error) {
	out, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	for _, rd := range runs {
		in, err := filepath.Abs(rd.Path)
		if err != nil {
			return nil, err
		}
		if real, err := filepath.EvalSymlinks(in); err == nil {
			in = real
		}
		if rel, err := filepath.Rel(in, resolveParent(out)); err == nil && !strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("--out %s is the run %s or inside it: a merge goes to a directory of its own", path, rd.Path)
		}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, fmt.Errorf("--out %s: %w", path, err)
	}
	if err := os.Mkdir(out, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("--out %s already exists: a merge writes a new directory, never over another run", path)
		}
		return nil, fmt.Errorf("--out %s: %w", path, err)
	}
	return &RunDir{Path: path}, nil
}

// CheckRenderDir refuses to re-render run into a directory that holds
// another run: its reports would overwrite that run's.
func CheckRenderDir(path string, run *SavedRun) error {
	if _, err := os.Stat(filepath.Join(path, "report.json")); err != nil {
		return nil
	}
	a, errA := filepath.Abs(path)
	b, errB := filepath.Abs(run.Path)
	if errA == nil && errB == nil && resolveParent(a) == resolveParent(b) {
		return nil
	}
	return fmt.Errorf("--out %s holds another run's reports: re-render into its own directory, or a new one", path)
}

// resolveParent is p with the symbolic links of its existing parent
// resolved, for comparing a path not yet created with existing ones.
func resolveParent(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(dir, filepath.Base(p))
	}
	return p
}

// SavedRun is a run directory read back: its report and, per scenario, the
// history and scoring inputs.
type SavedRun struct {
	Path    string
	Report  report.Report
	Saved   map[string]Saved
	History map[string]*history.History
}

// OpenRunDir reads a run directory written by verify (or a merge); path
// may also be a --report-dir that holds exactly one run (as each pod of a
// Kubernetes Job writes one). It takes bounded memory: a history of more
// than history.InMemory records (what a run keeps in memory before it
// spills) is read in place, a chunk at a time (history.OpenFile). The
// SavedRun must be closed.
func OpenRunDir(path string) (*SavedRun, error) {
	return openRunDir(path, history.InMemory)
}

// Close releases the histories read in place.
func (rd *SavedRun) Close() error {
	var first error
	for _, h := range rd.History {
		first = cmp.Or(first, h.Close())
	}
	return first
}

func openRunDir(path string, keep int) (_ *SavedRun, err error) {
	path = onlyRun(path)
	rd := &SavedRun{Path: path, Saved: map[string]Saved{}, History: map[string]*history.History{}}
	defer func() {
		if err != nil {
			rd.Close()
		}
	}()
	b, err := os.ReadFile(filepath.Join(path, "report.json"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a run directory: %w", path, err)
	}
	if err := json.Unmarshal(b, &rd.Report); err != nil {
		return nil, fmt.Errorf("%s: report.json: %w", path, err)
	}
	files, _ := filepath.Glob(filepath.Join(path, HistoriesDir, "*.json"))
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no saved histories under %s/", path, HistoriesDir)
	}
	for _, jf := range files {
		s, err := ReadSaved(jf)
		if err != nil {
			return nil, err
		}
		if _, dup := rd.Saved[s.Name]; dup {
			return nil, fmt.Errorf("%s: two saved histories of scenario %s", path, s.Name)
		}
		h, err := history.OpenFile(strings.TrimSuffix(jf, ".json")+".rlh", keep)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rd.Saved[s.Name] = s
		rd.History[s.Name] = h
	}
	return rd, nil
}

// Rescore analyses saved runs again: one run is re-rendered as it was
// recorded, several are merged (their histories joined exactly, Extra
// figures added up) when they are the segments of one plan. When out is
// set the merged histories are saved there. It returns the report and the
// exit code it calls for. Runs that cannot be one plan's segments are
// refused before anything is scored or written (exit 2): a run given
// twice or a copy of one (a share of the plan sent twice), runs of another
// plan under one scenario's name, a run that shares no scenario with the
// others. A plan whose segments are not all there is scored, and not
// measured. warn hears of a scenario missing from some of the runs.
func Rescore(runs []*SavedRun, out *RunDir, warn func(string)) (*report.Report, exitcode.Code, error) {
	if len(runs) == 0 {
		return nil, exitcode.Usage, exitcode.With(errors.New("no runs to score"), exitcode.Usage)
	}
	names := scenarioOrder(runs)
	var merges map[string]*score.Merge // nil: one run, re-rendered
	if len(runs) > 1 {
		var err error
		if merges, err = planMerges(runs, names); err != nil {
			return nil, exitcode.Usage, err
		}
	}
	rep := &report.Report{Started: runs[0].Report.Started, Suite: runs[0].Report.Suite}
	interrupted := false
	for _, rd := range runs {
		rep.DurationMs = max(rep.DurationMs, rd.Report.DurationMs)
		if rd.Report.Started.Before(rep.Started) {
			rep.Started = rd.Report.Started
		}
		if rd.Report.Status == score.StatusIncomplete {
			interrupted = true
		}
	}
	for _, name := range names {
		var in []mergeInput
		for _, rd := range runs {
			if h, ok := rd.History[name]; ok {
				in = append(in, mergeInput{h: h, saved: rd.Saved[name]})
			}
		}
		if len(runs) > 1 && len(in) != len(runs) && warn != nil {
			warn(fmt.Sprintf("%s is in %d of %d runs; merging what there is", name, len(in), len(runs)))
		}
		sr, err := scoreMerged(in, merges[name], out)
		if err != nil {
			return nil, exitcode.Of(err), fmt.Errorf("%s: %w", name, err)
		}
		rep.Scenarios = append(rep.Scenarios, sr)
	}
	return rep, Summarize(rep, interrupted), nil
}

// scenarioOrder is the order of the runs' scenarios: as in the first run,
// then any others by name.
func scenarioOrder(runs []*SavedRun) []string {
	var names []string
	seen := map[string]bool{}
	for _, rd := range runs {
		for _, sc := range rd.Report.Scenarios {
			if _, ok := rd.Saved[sc.Name]; ok && !seen[sc.Name] {
				seen[sc.Name] = true
				names = append(names, sc.Name)
			}
		}
		var rest []string
		for n := range rd.Saved {
			if !seen[n] {
				rest = append(rest, n)
			}
		}
		sort.Strings(rest)
		for _, n := range rest {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// planMerges refuses runs that cannot be merged as the segments of one
// plan (see Rescore) and returns, for each scenario, what its merge joins:
// each run's segment and clock, and the share of the plan none sent.
func planMerges(runs []*SavedRun, names []string) (map[string]*score.Merge, error) {
	refuse := func(format string, args ...any) error {
		return exitcode.With(fmt.Errorf("report merge: "+format, args...), exitcode.Usage)
	}
	for _, rd := range runs[1:] {
		shared := false
		for n := range rd.Saved {
			_, ok := runs[0].Saved[n]
			shared = shared || ok
		}
		if !shared {
			return nil, refuse("%s shares no scenario with %s: they are not runs of one plan", rd.Path, runs[0].Path)
		}
	}
	merges := map[string]*score.Merge{}
	for _, name := range names {
		m := &score.Merge{}
		var labelled []score.Segment // named by their runs' paths, for the refusal
		plan, planFrom := "", ""
		for _, rd := range runs {
			h, ok := rd.History[name]
			if !ok {
				continue
			}
			if p := rd.Saved[name].Plan; p != "" {
				if plan != "" && p != plan {
					return nil, refuse("%s: %s ran another plan than %s (its limit, target, traffic or faults differ): they are not segments of one run", name, rd.Path, planFrom)
				}
				plan, planFrom = p, rd.Path
			}
			seg, err := segmentOf(h.Meta)
			if err != nil {
				return nil, refuse("%s: %s: %v", name, rd.Path, err)
			}
			m.Runs = append(m.Runs, seg)
			seg.Label = rd.Path + " (" + seg.String() + ")"
			labelled = append(labelled, seg)
		}
		t := score.Tile(labelled)
		if len(t.Twice) > 0 {
			return nil, refuse("%s: %s sent the same share of the plan: a run given twice, or a copy of one, would count its requests twice", name, t.Twice[0])
		}
		m.Missing = t.String()
		merges[name] = m
	}
	return merges, nil
}

// segmentOf is the share of the plan a history's run sent, with its clock
// against the shared reference.
func segmentOf(m history.Meta) (score.Segment, error) {
	seg := workload.Whole()
	if m.Segment != "" {
		var err error
		if seg, err = workload.ParseSegment(m.Segment); err != nil {
			return score.Segment{}, err
		}
	}
	return score.Segment{Name: m.Segment, From: seg.From, To: seg.To,
		Offset: m.Clock.Offset, Uncertainty: m.Clock.Uncertainty, Reference: m.Clock.Reference, Late: m.Late}, nil
}

// mergeInput is one run's history of a scenario and its scoring inputs.
type mergeInput struct {
	h     *history.History
	saved Saved
}

// scoreMerged scores one scenario's histories merged as merge says (a
// single run is scored as it is when merge is nil; merging, even one
// run's share is judged against the whole plan), with the runs' Extra
// figures and counts lost added up and their setup notes joined, and
// saves the merge in out when set.
func scoreMerged(in []mergeInput, merge *score.Merge, out *RunDir) (report.Scenario, error) {
	saved := in[0].saved
	h := in[0].h
	if merge != nil {
		hs := make([]*history.History, len(in))
		extra, lostByID := map[string]float64{}, map[string]float64{}
		var notes []string
		for k, m := range in {
			hs[k] = m.h
			for key, v := range m.saved.Extra {
				extra[key] += v
			}
			for id, v := range m.saved.CountsLostByIdentity {
				lostByID[id] += v
			}
			for _, n := range m.saved.Notes {
				if !slices.Contains(notes, n) {
					notes = append(notes, n)
				}
			}
			saved.Interrupted = saved.Interrupted || m.saved.Interrupted
		}
		if len(extra) > 0 {
			saved.Extra = extra
		}
		if len(lostByID) > 0 {
			saved.CountsLostByIdentity = lostByID
		}
		saved.Notes, saved.RunNotes = notes, nil
		m, err := mergeHistories(hs)
		if err != nil {
			return report.Scenario{}, fmt.Errorf("merge: %w", err)
		}
		defer m.Close()
		h = m
	}
	sr, err := scoreRun(h, saved, saved.Interrupted, merge)
	if err != nil {
		return report.Scenario{}, err
	}
	if out != nil {
		if err := out.SaveHistory(h, saved); err != nil {
			return report.Scenario{}, err
		}
	}
	return sr, nil
}

// mergeHistories merges in memory while every input is there and the
// merge fits what a run keeps in memory; otherwise (a soak run's history
// read in place) it streams them into a merge that spills past
// history.InMemory, so memory stays bounded whatever their length. The
// merge must be closed.
func mergeHistories(hs []*history.History) (*history.History, error) {
	total, spilled := 0, false
	for _, h := range hs {
		total += h.Len()
		spilled = spilled || h.Spilled()
	}
	if !spilled && total <= history.InMemory {
		return history.Merge(hs...)
	}
	return history.MergeSpilled(history.SpillOptions{Keep: history.InMemory}, hs...)
}

// onlyRun is path when it is a run directory, else its only run directory
// when it holds exactly one, else path (for the caller's error to name).
func onlyRun(path string) string {
	if _, err := os.Stat(filepath.Join(path, "report.json")); err == nil {
		return path
	}
	runs, _ := filepath.Glob(filepath.Join(path, "*", "report.json"))
	if len(runs) == 1 {
		return filepath.Dir(runs[0])
	}
	return path
}

// Summarize decides the run from its scenarios' verdicts (score.Suite)
// and puts the decision in rep: its status, the verdicts counted, why a
// run that measured nothing failed. It returns the run's exit code.
func Summarize(rep *report.Report, interrupted bool) exitcode.Code {
	vs := make([]score.Verdict, len(rep.Scenarios))
	for i, sc := range rep.Scenarios {
		vs[i] = score.Verdict{Status: sc.Status, Words: sc.Verdict, Code: exitcode.Code(sc.ExitCode)}
	}
	s := score.Suite(vs, interrupted)
	rep.Schema, rep.Status, rep.Verdicts, rep.Reason = report.Schema, s.Status, s.Counts, s.Reason
	return s.Code
}
