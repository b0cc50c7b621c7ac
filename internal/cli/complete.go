package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/httpgw"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/report"
)

// flagValues lists, per flag name, the fixed values a flag of that name
// takes in every command that has it, for shell completion. Each list is
// the one the command validates with, so completion cannot offer a value
// the command refuses.
var flagValues = map[string]func() []string{
	"algorithm":        func() []string { return design.Names() },
	"format":           func() []string { return report.AllFormats },
	"schema":           func() []string { return keyspace.NewRegistry(keyspace.Params{}).Names() },
	"output":           func() []string { return []string{"table", "json"} },
	"on-error":         func() []string { return []string{design.OnErrorOpen, design.OnErrorClosed, design.OnErrorLocal} },
	"clock":            func() []string { return []string{design.ClockGateway, design.ClockRedis} },
	"ratelimit-fields": func() []string { return []string{httpgw.FieldsDraft11, httpgw.FieldsDraft06} },
	"type":             func() []string { return []string{keyspace.TypeString, keyspace.TypeHash, keyspace.TypeZSet} },
}

// listFlags are the flags in flagValues that take a comma-separated list
// (--format json,md): each completes the item after the last comma.
var listFlags = map[string]bool{"format": true}

// registerCompletions gives every flag named in flagValues, in every
// command of the tree, completion from its list.
func registerCompletions(c *cobra.Command) {
	// LocalNonPersistentFlags builds a new set at each call: once per
	// command, not per flag name (it was most of building the tree).
	local, persistent := c.LocalNonPersistentFlags(), c.PersistentFlags()
	for name, values := range flagValues {
		if local.Lookup(name) == nil && persistent.Lookup(name) == nil {
			continue
		}
		_ = c.RegisterFlagCompletionFunc(name, completeFrom(values, listFlags[name]))
	}
	for _, s := range c.Commands() {
		registerCompletions(s)
	}
}

// completeFrom completes a flag's value from the values that start with
// what is typed; for a list flag, the part after the last comma, without
// the items already given.
func completeFrom(values func() []string, list bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		prefix, given := "", []string(nil)
		if list {
			if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
				prefix = toComplete[:i+1]
				given = strings.Split(toComplete[:i], ",")
			}
		}
		var out []string
		for _, v := range values() {
			if !slices.Contains(given, v) && strings.HasPrefix(prefix+v, toComplete) {
				out = append(out, prefix+v)
			}
		}
		directive := cobra.ShellCompDirectiveNoFileComp
		if list {
			directive |= cobra.ShellCompDirectiveNoSpace
		}
		return out, directive
	}
}
