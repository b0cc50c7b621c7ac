package verify

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/traffic"
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

// SavedRun is a run directory read back: its report and, per scenario, the
// history and scoring inputs.
type SavedRun struct {
	Path    string
	Report  report.Report
	Saved   map[string]Saved
	History map[string]*history.History
}

// ReadRunDir reads a run directory written by verify (or a merge). path
// may also be a --report-dir that holds exactly one run (as each pod of a
// Kubernetes Job writes one), which is then read.
func ReadRunDir(path string) (*SavedRun, error) {
	return openRunDir(path, math.MaxInt)
}

// OpenRunDir is ReadRunDir for re-rendering in bounded memory: a history
// of more than traffic.InMemory records (what a run keeps in memory before
// it spills) is read in place, a chunk at a time (history.OpenFile), and
// the SavedRun must be closed.
func OpenRunDir(path string) (*SavedRun, error) {
	return openRunDir(path, traffic.InMemory)
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
// figures added up). When out is set the merged histories are saved there.
// warn hears of a scenario missing from some of the runs.
func Rescore(runs []*SavedRun, out *RunDir, warn func(string)) (*report.Report, error) {
	if len(runs) == 0 {
		return nil, errors.New("no runs to score")
	}
	// Scenario order: as in the first run, then any others by name.
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
	rep := &report.Report{Started: runs[0].Report.Started, Suite: runs[0].Report.Suite}
	for _, rd := range runs {
		rep.DurationMs = max(rep.DurationMs, rd.Report.DurationMs)
		if rd.Report.Started.Before(rep.Started) {
			rep.Started = rd.Report.Started
		}
		if rd.Report.Status == report.StatusIncomplete {
			rep.Incomplete = true
		}
	}
	for _, name := range names {
		var hs []*history.History
		var saved Saved
		extra, lostByID := map[string]float64{}, map[string]float64{}
		for _, rd := range runs {
			h, ok := rd.History[name]
			if !ok {
				continue
			}
			hs = append(hs, h)
			saved = rd.Saved[name]
			for k, v := range rd.Saved[name].Extra {
				extra[k] += v
			}
			for id, v := range rd.Saved[name].CountsLostByIdentity {
				lostByID[id] += v
			}
		}
		if len(runs) > 1 && len(hs) != len(runs) && warn != nil {
			warn(fmt.Sprintf("%s is in %d of %d runs; merging what there is", name, len(hs), len(runs)))
		}
		sr, err := scoreMerged(hs, saved, extra, lostByID, out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rep.Scenarios = append(rep.Scenarios, sr)
	}
	rep.Finish()
	return rep, nil
}

// scoreMerged scores one scenario's histories merged (one is scored as it
// is), with the runs' Extra figures and counts lost added up, and saves the
// merge in out when set.
func scoreMerged(hs []*history.History, saved Saved, extra, lostByID map[string]float64, out *RunDir) (report.Scenario, error) {
	h := hs[0]
	if len(hs) > 1 {
		m, err := mergeHistories(hs)
		if err != nil {
			return report.Scenario{}, fmt.Errorf("merge: %w", err)
		}
		defer m.Close()
		h = m
	}
	if len(extra) > 0 {
		saved.Extra = extra
	}
	if len(lostByID) > 0 {
		saved.CountsLostByIdentity = lostByID
	}
	sr, err := Score(h, saved)
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
// traffic.InMemory, so memory stays bounded whatever their length. The
// merge must be closed.
func mergeHistories(hs []*history.History) (*history.History, error) {
	total, spilled := 0, false
	for _, h := range hs {
		total += h.Len()
		spilled = spilled || h.Spilled()
	}
	if !spilled && total <= traffic.InMemory {
		return history.Merge(hs...)
	}
	return history.MergeSpilled(history.SpillOptions{Keep: traffic.InMemory}, hs...)
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
