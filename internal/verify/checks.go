package verify

import (
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target/httptarget"
	"github.com/rlctl/rlctl/internal/target/scripttarget"
)

// Checks are the rules of the targets verify builds, for loading
// scenarios: the same parsers the targets run, applied at load so a
// mistake names its file, line and field.
var Checks = scenario.Checks{
	URL: httptarget.CheckURL,
	Source: func(prefix string, n int) error {
		_, err := httptarget.SourceAddrs(prefix, n)
		return err
	},
	Template: scripttarget.CheckTemplate,
	Allowed: func(rule string) error {
		_, err := scripttarget.ParseRule(rule)
		return err
	},
	Replicates: limiter.Replicates,
	RetryAfter: func(rule string) error {
		_, err := scripttarget.ParseRetryRule(rule)
		return err
	},
}
