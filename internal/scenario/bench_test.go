package scenario_test

import (
	"github.com/rlctl/rlctl/internal/scenario"
	"os"
	"testing"
)

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scenario.Parse(data, "full.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
