package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redisconn"
)

// Version is set at build time with -ldflags "-X .../cli.Version=...".
var Version = "dev"

// Main runs rlctl with the process's arguments, streams, environment and
// signals, and returns the exit code. It is the only place that maps errors
// to exit codes.
func Main() int {
	softMemoryLimit(os.Getenv)
	f := &Factory{
		IO: &IOStreams{
			In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
			InTTY:  isatty.IsTerminal(os.Stdin.Fd()),
			OutTTY: isatty.IsTerminal(os.Stdout.Fd()),
			ErrTTY: isatty.IsTerminal(os.Stderr.Fd()),
		},
		Getenv: os.Getenv,
		Now:    time.Now,
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	return Run(f, os.Args[1:], sig, func(code int) { os.Exit(code) })
}

// MemoryLimit is the heap size rlctl asks Go's collector to stay under
// (runtime/debug.SetMemoryLimit) unless GOMEMLIMIT says otherwise. A
// soak or overload run's work is bounded by design, but the collector
// left to itself lets the heap grow to twice what is live: a 60s open run
// at 1,000,000/s peaked at 459MB RSS, 274MB with this limit, for the same
// CPU. Past it the collector works harder (at most half the CPU), never
// failing a run.
const MemoryLimit = 200 << 20

// softMemoryLimit sets MemoryLimit, unless the environment names one.
func softMemoryLimit(getenv func(string) string) {
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(MemoryLimit)
	}
}

// Run executes one command line. The first signal on sig cancels the
// command's context so it can stop gracefully and write what it has; a
// second one calls exit(130) at once. Tests call Run with their own streams,
// signal channel and exit function.
func Run(f *Factory, args []string, sig <-chan os.Signal, exit func(int)) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		fmt.Fprintln(f.IO.ErrOut, "rlctl: interrupted; stopping (press Ctrl-C again to exit now)")
		cancel(errInterrupted)
		select {
		case <-sig:
			fmt.Fprintln(f.IO.ErrOut, "rlctl: interrupted again; exiting now")
			exit(int(exitcode.Interrupted))
		case <-done:
		}
	}()

	root := NewRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return int(exitcode.OK)
	}
	code := exitcode.Of(err)
	if context.Cause(ctx) == errInterrupted && code != exitcode.Failed {
		// The command noticed the cancellation; whatever it returned, the
		// process was interrupted.
		code = exitcode.Interrupted
	} else if errors.As(err, new(*silentError)) {
		return int(code) // the command has said it itself
	}
	printError(f.IO.ErrOut, err)
	if f.Output == "json" || askedForJSON(args) {
		printJSONError(f.IO.Out, err, code)
	}
	return int(code)
}

// askedForJSON reports whether the command line asks for -o json, for an
// error found before the flag itself was parsed (an unknown flag ahead of
// it).
func askedForJSON(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "-o" || a == "--output":
			if i+1 < len(args) && args[i+1] == "json" {
				return true
			}
		case a == "-ojson" || a == "-o=json" || a == "--output=json":
			return true
		}
	}
	return false
}

var errInterrupted = errors.New("interrupted")

// Help lists commands in the order of commands(): the main job first.
// cobra keeps this in a global, set once here so that building command
// trees from many goroutines (tests) does not race on it.
func init() { cobra.EnableCommandSorting = false }

// silentError carries an exit code for an outcome the command has already
// reported itself (a failed threshold, audit findings).
type silentError struct{ code exitcode.Code }

func (e *silentError) Error() string           { return fmt.Sprintf("exit %d", e.code) }
func (e *silentError) ExitCode() exitcode.Code { return e.code }

// failed returns the error a command returns when its checks failed and it
// has already said so.
func failed() error { return &silentError{code: exitcode.Failed} }

func printError(w io.Writer, err error) {
	msg := strings.TrimSpace(err.Error())
	fmt.Fprintf(w, "rlctl: %s\n", msg)
}

// jsonError is what -o json prints on stdout for an error, so a program
// reading stdout gets JSON whatever happened; stderr keeps the line a
// person reads.
type jsonError struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

func printJSONError(w io.Writer, err error, code exitcode.Code) {
	_ = json.NewEncoder(w).Encode(jsonError{Error: strings.TrimSpace(err.Error()), ExitCode: int(code)})
}

// versionLine is what both `rlctl version` and `rlctl --version` print.
func versionLine() string { return fmt.Sprintf("rlctl %s (%s)", Version, runtime.Version()) }

// warnPasswordOnCommandLine says once, on stderr, that a password given
// in --redis is visible to every user of the machine (ps, /proc), and how
// to keep it out.
func warnPasswordOnCommandLine(f *Factory) {
	t, err := redisconn.ParseURL(f.RedisURL)
	if err != nil || (t.Password == "" && t.SentinelPassword == "") {
		return
	}
	fmt.Fprintln(f.IO.ErrOut, "rlctl: the --redis URL carries a password, which other users of this machine can read in the process list; leave it out of the URL and set REDISCLI_AUTH instead")
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "rlctl",
		Short: "Operate and verify Redis-backed rate limiters",
		Long: `rlctl operates a rate limiter's state in Redis (inspect, reset, repair TTLs,
audit) and verifies what a limiter design or a live deployment really allows:
true ceiling, boundary bursts, races, failover, fail-open/closed and latency.
` + exitCodesHelp(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if f.Output != "table" && f.Output != "json" {
				return usageError("-o %q: want table or json", f.Output)
			}
			if f.Timeout <= 0 {
				return usageError("--timeout must be positive")
			}
			if fl := cmd.Flag("redis"); fl != nil && fl.Changed {
				warnPasswordOnCommandLine(f)
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return exitcode.With(err, exitcode.Usage)
	})
	pf := root.PersistentFlags()
	pf.StringVar(&f.RedisURL, "redis", "", "Redis URL: redis://, rediss://, unix://, redis+sentinel://, redis+cluster://. "+
		"keys, audit and ping fall back to $RLCTL_REDIS_URL, then $REDIS_URL, then "+defaultRedisURL+"; gateway serve to those, then the embedded Redis; "+
		"verify uses this flag only, so the environment never redirects a run's load; "+
		"verify also takes spawn, spawn-sentinel and spawn-cluster (real redis-server processes it starts and stops)")
	pf.StringVarP(&f.Output, "output", "o", "table", "output format: table or json")
	pf.BoolVar(&f.NoProgress, "no-progress", false, "never draw progress bars")
	pf.DurationVar(&f.Timeout, "timeout", 5*time.Second, "connect and command timeout for Redis")
	pf.StringVar(&f.TLSCA, "tls-ca", "", "CA certificate file for rediss://")
	pf.StringVar(&f.TLSCert, "tls-cert", "", "client certificate file for rediss://")
	pf.StringVar(&f.TLSKey, "tls-key", "", "client key file for rediss://")
	pf.BoolVar(&f.TLSSkipVerify, "tls-skip-verify", false, "do not verify the server certificate (testing only)")

	for _, c := range commands(f) {
		root.AddCommand(c)
	}
	root.AddCommand(newHelpTopics()...)
	root.SetHelpCommand(newHelpCmd(root))
	// --version is rlctl's own flag, not cobra's: cobra's prints through a
	// text template, whose reflection keeps every method of every library
	// in the binary, and words it unlike `rlctl version`.
	var showVersion bool
	root.Flags().BoolVarP(&showVersion, "version", "v", false, "print rlctl's version, as the version command does")
	guardGroups(root)
	help := root.RunE
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if showVersion {
			return runVersion(&versionOptions{f: f})
		}
		return help(cmd, args)
	}
	registerCompletions(root)
	// Every command's help ends with the exit codes.
	var addExit func(c *cobra.Command)
	addExit = func(c *cobra.Command) {
		if c.Annotations[helpTopicAnnotation] != "" {
			return
		}
		if !strings.Contains(c.Long, "Exit status:") {
			if c.Long == "" {
				c.Long = c.Short + "\n"
			}
			c.Long += exitCodesHelp()
		}
		c.SilenceUsage, c.SilenceErrors = true, true
		// Wrong positional arguments are invalid usage (exit 2), like bad
		// flags.
		if check := c.Args; check != nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				return exitcode.With(check(cmd, args), exitcode.Usage)
			}
		}
		for _, s := range c.Commands() {
			addExit(s)
		}
	}
	addExit(root)
	return root
}
