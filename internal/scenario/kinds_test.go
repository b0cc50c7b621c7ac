package scenario_test

// The target kinds' sections (their fields, defaults, rules and help)
// register from the kinds' own packages, which import this one; an
// external test file is where this package's tests may import them. Every
// test of the package, internal ones included, runs in this binary, so it
// reads files with the kinds rlctl ships.
import _ "github.com/rlctl/rlctl/internal/target/all"
