// Command rlctl operates and verifies Redis-backed rate limiters.
package main

import (
	"os"

	"github.com/rlctl/rlctl/internal/cli"
)

func main() { os.Exit(cli.Main()) }
