package httptarget_test

// A test here reads a simulated scenario beside the http ones: the
// simulated kind's section registers from its own package.
import _ "github.com/rlctl/rlctl/internal/target/simtarget"
