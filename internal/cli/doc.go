// Package cli is rlctl's command line: one file per command, each with an
// options struct, a newCmdX that only turns argv into options, and a runX
// that does the work through the Factory. Only Main touches the process
// (os.Exit codes, signals, environment, standard streams).
package cli
