package arch

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rlctl/rlctl/"

// allowed lists, for every package of the module, the module packages it
// may import. Data flows one way: scenario → verify → target (gateway →
// limiter) → traffic → history → analysis → score → report; leaf
// packages (decision, metric, workload, fault, rate, exitcode, atomicfile,
// redact, netcheck, rawsock, textfmt, suggest) import none of ours,
// threshold only leaves, and design (the registry of limiter designs every
// package reads) only rate.
// scenario, the file format, imports only leaves: each target kind
// registers its own section of the format from above (scenario.Section).
// fault/inject turns a scenario's faults into hooks on the run's
// deployment: below the target kinds, beside the engine (traffic.Hook),
// above fault.
// traffic knows targets by its own interfaces (Target, Warmer, Prober)
// and neither the gateways nor the limiters.
var allowed = map[string][]string{
	"cmd/rlctl":             {"internal/cli"},
	"internal/cli":          {"*"}, // the top: it wires everything
	"internal/verify":       {"internal/exitcode", "internal/history", "internal/redisconn", "internal/report", "internal/rundir", "internal/scenario", "internal/score", "internal/target", "internal/traffic", "internal/workload"},
	"internal/rundir":       {"internal/analysis", "internal/atomicfile", "internal/ceiling", "internal/design", "internal/exitcode", "internal/history", "internal/metric", "internal/rate", "internal/report", "internal/scenario", "internal/score", "internal/threshold", "internal/workload"},
	"internal/measure":      {"internal/ceiling", "internal/design", "internal/exitcode", "internal/history", "internal/metric", "internal/rate", "internal/redisconn", "internal/scenario", "internal/verify", "internal/workload"},
	"internal/discover":     {"internal/decision", "internal/exitcode", "internal/traffic"},
	"internal/report":       {"internal/analysis", "internal/atomicfile", "internal/design", "internal/metric", "internal/rate", "internal/score", "internal/textfmt"},
	"internal/score":        {"internal/design", "internal/exitcode", "internal/metric", "internal/rate", "internal/textfmt", "internal/threshold"},
	"internal/analysis":     {"internal/decision", "internal/history", "internal/metric"},
	"internal/history":      {"internal/atomicfile", "internal/decision", "internal/rate"},
	"internal/traffic":      {"internal/decision", "internal/history", "internal/rate", "internal/workload"},
	"internal/scenario":     {"internal/design", "internal/exitcode", "internal/rate", "internal/redact", "internal/suggest", "internal/textfmt", "internal/threshold", "internal/workload"},
	"internal/gateway":      {"internal/decision", "internal/exitcode", "internal/limiter", "internal/redisconn"},
	"internal/httpgw":       {"internal/decision", "internal/gateway", "internal/limiter", "internal/rate"},
	"internal/limiter":      {"internal/decision", "internal/design", "internal/hotpath", "internal/rate", "internal/redisconn"},
	"internal/keyspace":     {"internal/ceiling", "internal/design", "internal/exitcode", "internal/rate", "internal/redisconn", "internal/textfmt"},
	"internal/ceiling":      {"internal/design", "internal/rate"},
	"internal/fault":        {},
	"internal/fault/inject": {"internal/design", "internal/exitcode", "internal/fault", "internal/history", "internal/keyspace", "internal/limiter", "internal/metric", "internal/redisconn", "internal/scenario", "internal/traffic"},
	"internal/redisconn":    {"internal/exitcode", "internal/redact"},
	"internal/hotpath":      {"internal/netcheck", "internal/rawsock"},
	"internal/redistest":    {"internal/redisconn"},
	"internal/decision":     {},
	"internal/design":       {"internal/rate"},
	"internal/metric":       {},
	"internal/threshold":    {"internal/metric", "internal/rate", "internal/suggest"},
	"internal/workload":     {},
	"internal/rate":         {},
	"internal/exitcode":     {},
	"internal/atomicfile":   {},
	"internal/redact":       {},
	"internal/suggest":      {},
	"internal/textfmt":      {},
	"internal/netcheck":     {},
	"internal/rawsock":      {},
	"internal/arch":         {},
	"scenarios":             {},
	"scripts/benchtool":     {"internal/history", "internal/limiter", "internal/rawsock"},

	// Each target kind registers itself with internal/target, which verify
	// builds through; the engine knows them only through its Target
	// interface, and none of them knows another.
	"internal/target/httptarget":   {"internal/decision", "internal/design", "internal/exitcode", "internal/fault", "internal/fault/deploy", "internal/fault/toxiproxy", "internal/history", "internal/keyspace", "internal/metric", "internal/netcheck", "internal/rawsock", "internal/redact", "internal/redisconn", "internal/scenario", "internal/suggest", "internal/target", "internal/traffic"},
	"internal/target/scripttarget": {"internal/decision", "internal/exitcode", "internal/fault/inject", "internal/history", "internal/hotpath", "internal/keyspace", "internal/rate", "internal/redisconn", "internal/scenario", "internal/target", "internal/traffic"},
	"internal/target/simtarget":    {"internal/decision", "internal/design", "internal/exitcode", "internal/fault", "internal/fault/inject", "internal/gateway", "internal/history", "internal/limiter", "internal/metric", "internal/rate", "internal/redisconn", "internal/scenario", "internal/target", "internal/traffic"},
	"internal/target":              {"internal/exitcode", "internal/fault/inject", "internal/history", "internal/keyspace", "internal/rate", "internal/redisconn", "internal/scenario", "internal/traffic"},
	"internal/target/all":          {"internal/target/httptarget", "internal/target/scripttarget", "internal/target/simtarget"},
	"internal/traffic/traffictest": {"internal/decision", "internal/history"},

	// Faults on a deployment rlctl did not start, each applied only with
	// the user's consent: Toxiproxy's API, and the deployment's own Redis.
	"internal/fault/toxiproxy": {"internal/exitcode"},
	"internal/fault/deploy":    {"internal/exitcode", "internal/fault", "internal/keyspace", "internal/redisconn"},
	// An independent gateway around third-party limiters, for tests only.
	"internal/redistest/thirdgw":  {},
	"internal/redistest/toxitest": {"internal/redistest"},
	"internal/calmtest":           {},
	"internal/idletest":           {},
}

// debts are arrows that exist and should not: each names what removing
// it needs. A debt paid must leave this list (the test says so).
var debts = map[string]string{}

// cliOnly are libraries of the command line: no core package may use them.
var cliOnly = []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "github.com/vbauerster/mpb", "github.com/mattn/go-isatty"}

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	touchSources(t)
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// touchSources looks at every Go file of the module, so the test cache
// knows this test depends on them all: go list, which reads them, runs in
// a process of its own that the cache does not watch.
func touchSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != "../.." {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") {
			_, err = os.Stat(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestImportsFollowTheLayout(t *testing.T) {
	used := map[string]bool{}
	imported := map[string]bool{} // every arrow that exists
	for _, p := range listPackages(t) {
		name := strings.TrimPrefix(p.ImportPath, module)
		rule, ok := allowed[name]
		if !ok {
			t.Errorf("%s is not in the import rules: add it to allowed, with the packages it may import", name)
			continue
		}
		for _, imp := range p.Imports {
			for _, lib := range cliOnly {
				if name != "internal/cli" && (imp == lib || strings.HasPrefix(imp, lib+"/")) {
					t.Errorf("%s imports %s: command-line libraries belong to internal/cli only", name, imp)
				}
			}
			if !strings.HasPrefix(imp, module) {
				continue
			}
			target := strings.TrimPrefix(imp, module)
			if target == "internal/cli" && name != "cmd/rlctl" {
				t.Errorf("%s imports internal/cli: nothing below the command line does", name)
			}
			arrow := name + " -> " + target
			imported[arrow] = true
			if debts[arrow] != "" {
				used[arrow] = true
			}
			if !slices.Contains(rule, "*") && !slices.Contains(rule, target) {
				t.Errorf("%s: not an allowed direction; if it is right, say so in allowed (and DESIGN.md)", arrow)
			}
		}
	}
	for arrow, why := range debts {
		if !used[arrow] {
			t.Errorf("debt %q (%s) is paid: remove it from debts and from allowed", arrow, why)
		}
	}
	// The rules say what is, not what once was: an allowed arrow no
	// import draws is removed, so the list stays the picture.
	for from, tos := range allowed {
		for _, to := range tos {
			if to != "*" && !imported[from+" -> "+to] {
				t.Errorf("%s may import %s, but does not: remove it from allowed", from, to)
			}
		}
	}
	if t.Failed() {
		t.Log("the rules: DESIGN.md, Layout; a core package knows nothing of the CLI, and data flows one way")
	}
}

// ioImports are the standard packages through which a package reaches
// files, processes or the network.
var ioImports = []string{"os", "os/exec", "os/signal", "io/fs", "io/ioutil", "path/filepath", "net", "syscall", "bufio", "embed"}

// score is the judge: a function of its inputs. Neither it nor any package
// of ours it imports, however indirectly, reaches a file, a process or the
// network.
func TestScoreDoesNoIO(t *testing.T) {
	pkgs := map[string]pkg{}
	for _, p := range listPackages(t) {
		pkgs[p.ImportPath] = p
	}
	seen := map[string]bool{}
	var visit func(path string)
	visit = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		for _, imp := range pkgs[path].Imports {
			if slices.Contains(ioImports, imp) || imp == "net" || strings.HasPrefix(imp, "net/") || strings.Contains(imp, "redis") {
				t.Errorf("%s imports %s: score and what it imports do no I/O", strings.TrimPrefix(path, module), imp)
			}
			if strings.HasPrefix(imp, module) {
				visit(imp)
			}
		}
	}
	visit(module + "internal/score")
	if len(seen) < 2 {
		t.Fatal("internal/score not found")
	}
}

// analysis is pure computation over histories: no Redis, no network.
func TestAnalysisTouchesNoNetwork(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"internal/analysis" && p.ImportPath != module+"internal/history" {
			continue
		}
		for _, imp := range p.Imports {
			if imp == "net" || strings.HasPrefix(imp, "net/") || strings.Contains(imp, "redis") {
				t.Errorf("%s imports %s: analysis and history are pure computation", p.ImportPath, imp)
			}
		}
	}
}
