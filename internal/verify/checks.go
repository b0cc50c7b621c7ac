package verify

import (
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/traffic"
)

// Checks are the rules of the targets verify builds, for loading
// scenarios: the same parsers the targets run, applied at load so a
// mistake names its file, line and field.
var Checks = scenario.Checks{
	URL: traffic.CheckURL,
	Source: func(prefix string, n int) error {
		_, err := traffic.SourceAddrs(prefix, n)
		return err
	},
	Template: traffic.CheckTemplate,
	Allowed: func(rule string) error {
		_, err := traffic.ParseRule(rule)
		return err
	},
	RetryAfter: func(rule string) error {
		_, err := traffic.ParseRetryRule(rule)
		return err
	},
}
