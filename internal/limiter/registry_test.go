package limiter

import (
	"testing"

	"github.com/rlctl/rlctl/internal/design"
)

// TestEveryDesignHasAConstructor fails when a design package design
// registers has no constructor here, when one built here is not
// registered there, or when the designs that can wait for replicas
// (design.Options.Replicate) are not exactly those decided by one Lua
// script, whose source Scripts shows. TestPolicyAfterClientKill and
// TestKeysMatchWhatScriptsWrite then build each against a real
// redis-server.
func TestEveryDesignHasAConstructor(t *testing.T) {
	t.Parallel()
	for _, d := range design.All() {
		if constructors[d.Name] == nil {
			t.Errorf("%s: no constructor registered", d.Name)
		}
		_, lua := scriptDesigns[d.Name]
		if lua != d.Accepts.Replicate {
			t.Errorf("%s: decided by one script %v, but its design says replicate applies %v", d.Name, lua, d.Accepts.Replicate)
		}
		if _, src := Scripts()[d.Name]; lua && !src {
			t.Errorf("%s: a Lua design without a source in Scripts", d.Name)
		}
	}
	for name := range constructors {
		if _, ok := design.Lookup(name); !ok {
			t.Errorf("constructor for %q, which package design does not register", name)
		}
	}
}
