// Package scenarios holds rlctl's built-in suite: one scenario per point of
// the design write-ups, each showing a failure and, where there is one, its
// fix. The files are embedded in the binary so `rlctl verify` runs them
// with nothing else on disk.
package scenarios

import "embed"

// FS holds the suite's *.yaml files at its root.
//
//go:embed *.yaml
var FS embed.FS
