// Package all registers every target kind rlctl is built with: import it
// for its side effect where runs are built (the command line, and the
// tests of the packages that run scenarios).
package all

import (
	_ "github.com/rlctl/rlctl/internal/target/httptarget"   // kind http
	_ "github.com/rlctl/rlctl/internal/target/scripttarget" // kind redis-script
	_ "github.com/rlctl/rlctl/internal/target/simtarget"    // kind simulated
)
