package scenario

import "github.com/rlctl/rlctl/internal/design"

// designOf is what package design says of a simulated target's algorithm:
// the zero Design when it names none (an http or redis-script target, an
// unknown name, reported on its own), whose every option reads as refused
// and whose state as unknown.
func designOf(algorithm string) design.Design {
	if d, ok := design.Lookup(algorithm); ok {
		return *d
	}
	return design.Design{}
}
