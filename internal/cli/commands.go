package cli

import "github.com/spf13/cobra"

// commands lists rlctl's top-level commands, in help order.
func commands(f *Factory) []*cobra.Command {
	return []*cobra.Command{
		newCmdVersion(f, nil),
		newCmdPing(f, nil),
	}
}
