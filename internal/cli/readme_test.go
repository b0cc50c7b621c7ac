package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every flag README.md tells a reader to pass exists on some rlctl
// command, so a flag renamed or dropped cannot linger in the instructions.
func TestREADMEFlagsExist(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := testFactory(&syncBuffer{}, nil)
	flags := map[string]bool{"help": true, "version": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(fl *pflag.Flag) { flags[fl.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(f))
	// Flags of other tools README mentions beside rlctl's own.
	others := []string{"execution-segment", "scan"} // k6's and redis-cli's
	seen := 0
	for _, m := range regexp.MustCompile("(?:^|[\\s`(])--([a-z][a-z0-9-]+)").FindAllStringSubmatch(string(b), -1) {
		seen++
		if !flags[m[1]] && !slices.Contains(others, m[1]) {
			t.Errorf("README names --%s, which no rlctl command has", m[1])
		}
	}
	if seen < 10 {
		t.Fatalf("found only %d flags in README: the pattern no longer reads it", seen)
	}
}
