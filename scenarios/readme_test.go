package scenarios_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/scenarios"
)

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The counts and names README.md states about the built-in suite and the
// designs are the code's: a scenario added, renamed or made to need a
// Cluster, a design added, shows here before a reader is told a count
// that no longer holds.
func TestREADMEStatesTheSuiteAsItIs(t *testing.T) {
	text := strings.Join(strings.Fields(readme(t)), " ") // lines wrap anywhere
	scs, err := scenario.LoadFS(scenarios.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	names, needCluster := map[string]bool{}, 0
	for _, s := range scs {
		names[s.Name] = true
		if s.Requires == scenario.RequireCluster {
			needCluster++
		}
	}

	// "for the 26: 25 run, 23 pass" (a Sentinel runs all but the
	// Cluster's) and "all 26 pass" (a Cluster runs them all).
	stated := regexp.MustCompile(`for the (\d+): (\d+) run, (\d+) pass`).FindAllStringSubmatch(text, -1)
	for _, m := range stated {
		if n, _ := strconv.Atoi(m[1]); n != len(scs) {
			t.Errorf("README says %q; the built-in suite has %d scenarios", m[0], len(scs))
		}
		r, _ := strconv.Atoi(m[2])
		if r != len(scs)-needCluster {
			t.Errorf("README says %q; without a Cluster %d run", m[0], len(scs)-needCluster)
		}
		if p, _ := strconv.Atoi(m[3]); p > r {
			t.Errorf("README says %q: more pass than run", m[0])
		}
	}
	for _, m := range regexp.MustCompile(`all (\d+) pass`).FindAllStringSubmatch(text, -1) {
		if n, _ := strconv.Atoi(m[1]); n != len(scs) {
			t.Errorf("README says %q; the built-in suite has %d scenarios", m[0], len(scs))
		}
	}
	if len(stated) == 0 {
		t.Error("README no longer states how the suite fares on the spawned topologies")
	}

	// Every built-in scenario README names by name exists.
	for _, m := range regexp.MustCompile("built-in `([a-z0-9-]+)`").FindAllStringSubmatch(text, -1) {
		if !names[m[1]] {
			t.Errorf("README names the built-in %s, which the suite does not hold", m[1])
		}
	}
	for _, m := range regexp.MustCompile("`([a-z0-9-]+)` and `([a-z0-9-]+)` are the same design").FindAllStringSubmatch(text, -1) {
		for _, n := range m[1:] {
			if !names[n] {
				t.Errorf("README names the built-in %s, which the suite does not hold", n)
			}
		}
	}

	// The designs, every one, in the order scenario files are told them.
	m := regexp.MustCompile("Designs \\(`algorithm:`\\): ((?:`[a-z-]+`,? ?)+)").FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README lists no designs")
	}
	var listed []string
	for _, d := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(m[1], -1) {
		listed = append(listed, d[1])
	}
	if !slices.Equal(listed, design.Names()) {
		t.Errorf("README lists the designs %v; rlctl has %v", listed, design.Names())
	}

	// The demo runs ./scenarios of this repository: its reports are named
	// after that directory.
	if want := "reports/<UTC time>-" + filepath.Base("scenarios") + "/"; !strings.Contains(text, want) {
		t.Errorf("README does not name the demo's report directory %s", want)
	}
}
