package scenario_test

import (
	"github.com/rlctl/rlctl/internal/scenario"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the loader: it must never panic, and
// every error it reports must name the file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(base))
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Add([]byte("name: x\n---\n---\nlimit: 1/s\n"))
	f.Add([]byte("target: {endpoints: [{share: .5}, {share: .5}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		scs, err := scenario.Parse(data, "fuzz.yaml")
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.yaml") {
					t.Fatalf("error line without the file: %q", line)
				}
			}
			return
		}
		for _, sc := range scs {
			if sc.Name == "" || sc.Limit.Count <= 0 || sc.Traffic.MaxRequests < 1 || sc.Traffic.Duration <= 0 || len(sc.Target.Endpoints) == 0 {
				t.Fatalf("accepted an incomplete scenario: %+v", sc)
			}
		}
	})
}
