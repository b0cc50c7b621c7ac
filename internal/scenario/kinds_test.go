package scenario_test

// The target kinds' sections (their fields, defaults, rules and help)
// register from the kinds' own packages, which import this one, so this
// package's tests read files with the kinds rlctl ships. Every test file
// is external (package scenario_test): one inside the package would make
// the kinds' packages compile again against its test build.
import _ "github.com/rlctl/rlctl/internal/target/all"
