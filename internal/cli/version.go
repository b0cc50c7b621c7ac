package cli

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

type versionOptions struct {
	f *Factory
}

func newCmdVersion(f *Factory, runF func(*versionOptions) error) *cobra.Command {
	opts := &versionOptions{f: f}
	return &cobra.Command{
		Use:   "version",
		Short: "Print rlctl's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runVersion(opts)
		},
	}
}

func runVersion(opts *versionOptions) error {
	out := opts.f.IO.Out
	if opts.f.JSON() {
		return json.NewEncoder(out).Encode(map[string]string{"version": Version, "go": runtime.Version()})
	}
	_, err := fmt.Fprintln(out, versionLine())
	return err
}
