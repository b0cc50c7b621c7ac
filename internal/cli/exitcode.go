package cli

import (
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// exitCodesHelp is the EXIT STATUS section every command's help ends with.
func exitCodesHelp() string {
	var b strings.Builder
	b.WriteString("\nExit status:\n")
	for _, e := range exitcode.Table {
		fmt.Fprintf(&b, "  %-4d %s\n", e.Code, e.Meaning)
	}
	return b.String()
}

// usageError marks an error as invalid usage (exit 2).
func usageError(format string, args ...any) error {
	return exitcode.Errorf(exitcode.Usage, format, args...)
}
