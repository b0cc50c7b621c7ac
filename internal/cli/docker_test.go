package cli

import (
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/idletest"
)

// dockerfile is the image recipe deploy/k8s names.
const dockerfile = "../../Dockerfile"

// TestDockerImageIsAStaticBinaryOnScratch: the Dockerfile's last stage is
// FROM scratch with rlctl as its entry point, copied from where the build
// stage's go build writes it; that go build (its own RUN line, run here
// with -o in a temporary directory) has cgo off and yields a static
// binary: no program interpreter (PT_INTERP) and no shared library it
// needs (DT_NEEDED), so it runs on an empty base.
func TestDockerImageIsAStaticBinaryOnScratch(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var build []string
	last := -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "FROM "):
			last = i
		case strings.HasPrefix(l, "RUN ") && strings.Contains(l, " go build "):
			build = shellWords(t, strings.TrimPrefix(l, "RUN "))
		}
	}
	final := strings.Join(lines[max(last, 0):], "\n")
	if last < 0 || lines[last] != "FROM scratch" || !strings.Contains(final, `ENTRYPOINT ["/rlctl"]`) {
		t.Fatalf("the last stage is %q; want FROM scratch with ENTRYPOINT [\"/rlctl\"]", lines[max(last, 0)])
	}
	if len(build) == 0 || build[0] != "CGO_ENABLED=0" || build[1] != "go" || build[2] != "build" {
		t.Fatalf("the build stage runs %q; want CGO_ENABLED=0 go build ...", build)
	}
	o := slices.Index(build, "-o")
	if o < 0 || o+1 >= len(build) || !strings.Contains(final, "COPY --from=build "+build[o+1]+" /rlctl") {
		t.Fatalf("the final stage does not copy the binary go build writes (%q)", build)
	}
	bin := filepath.Join(t.TempDir(), "rlctl")
	build[o+1] = bin
	// The build argument VERSION, as docker build passes it.
	for i, a := range build {
		build[i] = os.Expand(a, func(k string) string {
			if k != "VERSION" {
				t.Fatalf("the go build line uses ${%s}, which no ARG gives", k)
			}
			return "test"
		})
	}
	// At idle priority, one build at a time: see idletest.
	cmd := idletest.Command(build[1], build[2:]...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), build[0])
	if out, err := idletest.Build(cmd); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(build, " "), err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary names a program interpreter: it is dynamically linked")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v): it would not run FROM scratch", libs, err)
	}
}

// shellWords splits a RUN line as the shell would, for the quoting a
// Dockerfile's go build uses: words, and "double-quoted" strings.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`"([^"]*)"|(\S+)`).FindAllStringSubmatch(line, -1) {
		if m[2] != "" {
			out = append(out, m[2])
		} else {
			out = append(out, m[1])
		}
	}
	return out
}
