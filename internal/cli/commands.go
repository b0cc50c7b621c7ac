package cli

import (
	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/suggest"
)

// commands lists rlctl's top-level commands, in help order.
func commands(f *Factory) []*cobra.Command {
	return []*cobra.Command{
		newCmdVerify(f, nil),
		newCmdReport(f, nil),
		newCmdCeiling(f, nil),
		newCmdDiscover(f, nil),
		newCmdKeys(f),
		newCmdAudit(f, nil),
		newCmdPing(f, nil),
		newCmdGateway(f, nil),
		newCmdVersion(f, nil),
	}
}

// guardGroups makes every command that only groups others (rlctl, keys,
// report, gateway) refuse an argument that names none of them: cobra
// would print the group's help and exit 0, so `rlctl keys inspcet u`
// looked like success. Bare, the group still prints its help.
func guardGroups(c *cobra.Command) {
	for _, s := range c.Commands() {
		guardGroups(s)
	}
	if c.Runnable() || !c.HasSubCommands() {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		return unknownCommand(cmd, args[0])
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// unknownCommand is invalid usage (exit 2) naming what was typed, the
// nearest commands and help topics of the group, and where the whole list
// is.
func unknownCommand(group *cobra.Command, typed string) error {
	var names []string
	for _, c := range group.Commands() {
		if !c.Hidden && (c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand()) {
			names = append(names, c.Name())
			names = append(names, c.Aliases...)
		}
	}
	return exitcode.Errorf(exitcode.Usage, "unknown command %q for %q%s (%s --help lists them)",
		typed, group.CommandPath(), suggest.DidYouMean(typed, names), group.CommandPath())
}

// newHelpCmd replaces cobra's help command, which prints the root's help
// and exits 0 for a topic it does not know: here that is invalid usage,
// with the nearest topics or commands.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command|topic]",
		Short: "Help about any command, or a topic (scenarios, metrics)",
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, c := range root.Commands() {
				if c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
					names = append(names, c.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil {
				return exitcode.With(err, exitcode.Usage)
			}
			if len(rest) > 0 && target.HasSubCommands() {
				return unknownCommand(target, rest[0])
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}
