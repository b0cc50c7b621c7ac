package cli

import "github.com/spf13/cobra"

// commands lists rlctl's top-level commands, in help order.
func commands(f *Factory) []*cobra.Command {
	return []*cobra.Command{
		newCmdVerify(f, nil),
		newCmdReport(f, nil),
		newCmdCeiling(f, nil),
		newCmdKeys(f),
		newCmdAudit(f, nil),
		newCmdPing(f, nil),
		newCmdGateway(f, nil),
		newCmdVersion(f, nil),
	}
}
