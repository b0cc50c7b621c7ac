package cli

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
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
	build, final, err := dockerfileBuild()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(final, "FROM scratch\n") || !strings.Contains(final, `ENTRYPOINT ["/rlctl"]`) {
		t.Fatalf("the last stage is %q; want FROM scratch with ENTRYPOINT [\"/rlctl\"]", strings.SplitN(final, "\n", 2)[0])
	}
	o := slices.Index(build, "-o")
	if !strings.Contains(final, "COPY --from=build "+build[o+1]+" /rlctl") {
		t.Fatalf("the final stage does not copy the binary go build writes (%q)", build)
	}
	f, err := elf.Open(UserBinary(t))
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

// TestUserBinaryKeepsOnlyTheMethodsItCalls: the linker drops the methods
// nothing calls, unless the binary can execute a text or html template,
// whose method lookup by name at run time makes it keep every exported
// method of every type, go-redis's and rueidis's thousands of commands
// among them (twice the binary's size). The function that does that
// lookup must not be linked in; its name would be in the binary's own
// function table, which -s keeps.
func TestUserBinaryKeepsOnlyTheMethodsItCalls(t *testing.T) {
	t.Parallel()
	bin, err := os.ReadFile(UserBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bin, []byte("runtime.main")) {
		t.Fatal("the binary has no function table to search: runtime.main is not named")
	}
	if bytes.Contains(bin, []byte("text/template.(*state).evalField")) {
		t.Error("rlctl links text/template's execution: something renders a template (cobra's Set*Template, html/template), so every library method is kept")
	}
}

// dockerfileBuild reads the Dockerfile: its build stage's go build line,
// as words (CGO_ENABLED=0 go build ... -o PATH ...), and the text of its
// last stage.
func dockerfileBuild() (build []string, final string, err error) {
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		return nil, "", err
	}
	lines := strings.Split(string(b), "\n")
	last := -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "FROM "):
			last = i
		case strings.HasPrefix(l, "RUN ") && strings.Contains(l, " go build "):
			build = shellWords(strings.TrimPrefix(l, "RUN "))
		}
	}
	if len(build) < 3 || build[0] != "CGO_ENABLED=0" || build[1] != "go" || build[2] != "build" {
		return nil, "", fmt.Errorf("the build stage runs %q; want CGO_ENABLED=0 go build ...", build)
	}
	if o := slices.Index(build, "-o"); o < 0 || o+1 >= len(build) {
		return nil, "", fmt.Errorf("the build stage's go build names no -o: %q", build)
	}
	return build, strings.Join(lines[max(last, 0):], "\n"), nil
}

// userBin is the binary UserBinary builds, once per test binary.
var userBin struct {
	once      sync.Once
	dir, path string
	err       error
}

// UserBinary returns rlctl as users run it: built once for this test
// binary by the Dockerfile's own go build line, with -o in a temporary
// directory and the build argument VERSION "test". The build runs at
// idle CPU priority, one at a time with the other builds tests start:
// see idletest. RemoveUserBinary removes it.
func UserBinary(t testing.TB) string {
	t.Helper()
	userBin.once.Do(func() {
		build, _, err := dockerfileBuild()
		if err != nil {
			userBin.err = err
			return
		}
		if userBin.dir, err = os.MkdirTemp("", "rlctl-user-"); err != nil {
			userBin.err = err
			return
		}
		bin := filepath.Join(userBin.dir, "rlctl")
		build[slices.Index(build, "-o")+1] = bin
		// The build argument VERSION, as docker build passes it.
		for i, a := range build {
			build[i] = os.Expand(a, func(k string) string {
				if k != "VERSION" && err == nil {
					err = fmt.Errorf("the go build line uses ${%s}, which no ARG gives", k)
				}
				return "test"
			})
		}
		if err != nil {
			userBin.err = err
			return
		}
		cmd := idletest.Command(build[1], build[2:]...)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), build[0])
		if out, err := idletest.Build(cmd); err != nil {
			userBin.err = fmt.Errorf("%s: %v\n%s", strings.Join(build, " "), err, out)
			return
		}
		userBin.path = bin
	})
	if userBin.err != nil {
		t.Fatal(userBin.err)
	}
	return userBin.path
}

// RemoveUserBinary removes what UserBinary built; TestMain calls it once
// every test has run.
func RemoveUserBinary() {
	if userBin.dir != "" {
		os.RemoveAll(userBin.dir)
	}
}

// shellWords splits a RUN line as the shell would, for the quoting a
// Dockerfile's go build uses: words, and "double-quoted" strings.
func shellWords(line string) []string {
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
