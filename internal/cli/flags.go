package cli

import (
	"slices"

	"github.com/rlctl/rlctl/internal/limiter"
)

// validAlgorithm reports whether a is a limiter design's name.
func validAlgorithm(a string) bool { return slices.Contains(limiter.Algorithms, a) }
