package scripttarget

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/rate"
)

// Watching a user's script before it meets a Redis rlctl did not start.
//
// A run on a shared Redis keeps rlctl's own writes in a namespace, but a
// script runs whatever its author wrote: a FLUSHALL, a SET of another
// application's key. Watch runs the script first on a server rlctl starts
// for the purpose, with the scenario's own key and argument templates, and
// reports every command that reaches past the keys the call was given.
//
// Where redis-server is installed it is the watch: MONITOR shows every
// command a script runs, from inside the server, as the server runs it,
// and the server itself says which arguments of a command are keys and
// whether it reads, writes or deletes each (COMMAND GETKEYSANDFLAGS, the
// key specs of the installed version), so nothing is guessed. A user
// without redis-server (rlctl needs none) is watched on the embedded Redis
// instead: a hook sees each command the script calls, and miniredis's
// command table gives key positions and flags; it knows fewer commands, so
// a command it cannot place is taken to write every argument that is not a
// number, which errs towards refusing. A keyspace diff before and after
// was the alternative, and it cannot see a DEL of a key the watch's empty
// server never held.
//
// The watch exercises what a few identities do: more calls than the limit
// in one window, then two later windows. A script that behaves otherwise
// on data only the user's Redis holds is beyond it, and the notes say what
// it covered.

// minWatchTimeout bounds one call of the watch from below: the watch runs on
// a loaded machine, and what it looks for is a script that would hold a
// server for seconds.
const minWatchTimeout = time.Second

// watchIdentities and watchCalls bound the watch: a few identities, each
// called up to the limit and past it within one window.
const (
	watchIdentities = 3
	watchCalls      = 20
)

// WatchOptions say what Watch runs: the target's script with the templates
// the run will send (its namespace already in the keys).
type WatchOptions struct {
	Source     string
	Keys, Args []string
	Limit      rate.Limit
	// Identities are the run's first identities; Watch uses a few.
	Identities []string
	Gateways   int
	// Timeout is the run's call timeout; a watch call may take at least
	// minWatchTimeout.
	Timeout time.Duration
	// Embedded watches on the embedded Redis even where redis-server is
	// installed (to test what a user without it gets).
	Embedded bool
}

// Finding is one thing the script did that a run on a Redis rlctl did not
// start must not do.
type Finding struct {
	// Command is the command as the script called it, upper case ("SET",
	// "SCRIPT FLUSH"); empty for what was not a command (a call that ran
	// too long).
	Command string
	// Key is the key outside the call's KEYS it wrote or deleted; empty for
	// a command on no key or on the whole server.
	Key  string
	What string
}

func (f Finding) String() string {
	var b strings.Builder
	if f.Command != "" {
		b.WriteString(f.Command)
		if f.Key != "" {
			fmt.Fprintf(&b, " %q", f.Key)
		}
		b.WriteString(" (")
		b.WriteString(f.What)
		b.WriteString(")")
		return b.String()
	}
	return f.What
}

// Watched is what Watch saw.
type Watched struct {
	// Server says where the script was watched: "a redis-server rlctl
	// started (7.0.15)" or "the embedded Redis".
	Server     string
	Calls      int
	Identities int
	// Findings are what the script must not do on a shared Redis, each
	// command and key once, in the order seen.
	Findings []Finding
	// Reads are keys outside KEYS the script read (at most a few): no harm
	// to them, but its decisions then rest on data outside the run.
	Reads []string
	// Failed counts calls the script answered with an error; FirstError
	// is the first. What a script does past its error was not seen.
	Failed     int
	FirstError string
}

// Clean reports whether every call ran to its end and touched nothing but
// its KEYS: only then can rlctl vouch for what a run does on a shared
// Redis.
func (w *Watched) Clean() bool { return len(w.Findings) == 0 && w.Failed == 0 }

// Coverage says what the watch ran, for notes: "45 calls for 3 identities
// on a redis-server rlctl started (7.0.15)".
func (w *Watched) Coverage() string {
	ids := "identity"
	if w.Identities != 1 {
		ids = "identities"
	}
	return fmt.Sprintf("%d calls for %d %s on %s", w.Calls, w.Identities, ids, w.Server)
}

// Describe lists the findings, at most max of them, for messages.
func (w *Watched) Describe(max int) string {
	var parts []string
	for i, f := range w.Findings {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(w.Findings)-max))
			break
		}
		parts = append(parts, f.String())
	}
	return strings.Join(parts, "; ")
}

// observed is one command a script ran, as the watch saw it.
type observed struct {
	args []string // the command's name first, as called
	db   int      // the database it ran in; -1 when the watch cannot tell
}

// keyUse is one key a command names, and what it does to it.
type keyUse struct {
	key          string
	write, erase bool
}

// commandInfo is what the watch server says about a command.
type commandInfo struct {
	known      bool
	flags      map[string]bool
	categories map[string]bool
	// noKeys: the command takes no key (first key position 0, no movable
	// keys).
	noKeys  bool
	movable bool
	// first, last and step are the legacy key positions (last < 0 counts
	// from the end).
	first, last, step int
	// sub: the command is a container (OBJECT, XGROUP...) whose
	// subcommands have infos of their own.
	sub bool
}

// watchServer is a server a script is watched on.
type watchServer interface {
	// describe names it for notes.
	describe() string
	client() redis.UniversalClient
	// call runs the script once and returns what it ran, in order, and
	// the script's own error.
	call(ctx context.Context, s *redis.Script, keys []string, args []any) ([]observed, error)
	// keysOf says which keys a command names and what it does to each;
	// exact is false when that was guessed from the command's arguments.
	keysOf(ctx context.Context, o observed, info commandInfo) (uses []keyUse, exact bool)
	info(ctx context.Context, name string) commandInfo
	// close stops the server; stuck says a script may still be running
	// there.
	close(stuck bool)
}

// Watch runs the script on a server rlctl starts, as a run would call it,
// and reports what it touched beyond each call's KEYS. It fails only when
// the server cannot be started (exitcode.Unreachable) or a template is
// malformed (exitcode.Usage).
func Watch(ctx context.Context, o WatchOptions) (*Watched, error) {
	keys, args, err := parseTemplates(o.Keys, o.Args)
	if err != nil {
		return nil, exitcode.With(fmt.Errorf("redis-script target: %w", err), exitcode.Usage)
	}
	var srv watchServer
	if _, lookErr := exec.LookPath("redis-server"); lookErr == nil && !o.Embedded {
		srv, err = startMonitored(ctx)
	} else {
		srv, err = startHooked()
	}
	if err != nil {
		return nil, exitcode.With(fmt.Errorf("redis-script target: start a server to watch the script on: %w", err), exitcode.Unreachable)
	}
	w := &Watched{Server: srv.describe()}
	stuck := false
	defer func() { srv.close(stuck) }()

	ids := o.Identities[:min(len(o.Identities), watchIdentities)]
	w.Identities = len(ids)
	timeout := max(o.Timeout, minWatchTimeout)
	script := redis.NewScript(o.Source)
	infos := map[string]commandInfo{}
	seen := map[Finding]bool{}
	gateways := max(o.Gateways, 1)
	var requestID uint64
	t0 := time.Now()
	for _, id := range ids {
		// Past the limit in one window, then once in each of the next two,
		// so the branches a window's end takes run too.
		var at []time.Time
		for range min(o.Limit.Count, watchCalls) + 1 {
			at = append(at, t0)
		}
		at = append(at, t0.Add(o.Limit.Window), t0.Add(2*o.Limit.Window))
		for _, now := range at {
			requestID++
			v := vars{id: id, now: now, limit: o.Limit, gateway: int(requestID) % gateways, requestID: requestID}
			callKeys := make([]string, len(keys))
			for i, k := range keys {
				callKeys[i] = k.expand(&v)
			}
			callArgs := make([]any, len(args))
			for i, a := range args {
				callArgs[i] = a.expand(&v)
			}
			cctx, cancel := context.WithTimeout(ctx, timeout)
			ran, err := srv.call(cctx, script, callKeys, callArgs)
			cancel()
			w.Calls++
			for _, ob := range ran {
				for _, f := range classify(ctx, srv, infos, ob, callKeys, w) {
					if !seen[f] {
						seen[f] = true
						w.Findings = append(w.Findings, f)
					}
				}
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if timedOut(err) {
				stuck = true
				w.Findings = append(w.Findings, Finding{What: fmt.Sprintf("a call was still running after %v: on a shared Redis a script that runs this long has the server answer BUSY to every other client", timeout)})
				return w, nil
			}
			if err != nil && !errors.Is(err, redis.Nil) {
				w.Failed++
				if w.FirstError == "" {
					w.FirstError = err.Error()
				}
			}
		}
	}
	return w, nil
}

// parseTemplates parses key and argument templates.
func parseTemplates(keys, args []string) ([]template, []template, error) {
	var out [2][]template
	for i, group := range [][]string{keys, args} {
		for _, s := range group {
			tp, err := parseTemplate(s)
			if err != nil {
				return nil, nil, fmt.Errorf("%q: %w", s, err)
			}
			out[i] = append(out[i], tp)
		}
	}
	return out[0], out[1], nil
}

// serverWide are commands that act beyond any key a script is given, each
// with what it does. They are refused whatever keys they name.
var serverWide = map[string]string{
	"flushall":     "empties every database",
	"flushdb":      "empties the whole database",
	"swapdb":       "swaps two whole databases",
	"select":       "switches to another database, outside the run's namespace",
	"move":         "moves a key to another database",
	"migrate":      "moves keys to another server",
	"config":       "reads or changes the server's configuration",
	"shutdown":     "stops the server",
	"debug":        "a debugging command that can crash, stall or rewrite the server",
	"script":       "manages the server's script cache",
	"function":     "manages the server's functions",
	"keys":         "walks the whole keyspace, blocking the server meanwhile",
	"publish":      "sends a message to the server's subscribers",
	"spublish":     "sends a message to the server's subscribers",
	"client":       "acts on other clients' connections",
	"acl":          "reads or changes the server's users",
	"cluster":      "acts on the Cluster",
	"module":       "loads or unloads server modules",
	"save":         "writes the whole dataset to disk",
	"bgsave":       "writes the whole dataset to disk",
	"bgrewriteaof": "rewrites the append-only file",
	"replicaof":    "changes the server's replication",
	"slaveof":      "changes the server's replication",
	"failover":     "fails the server over",
	"pfdebug":      "a debugging command",
	"pfselftest":   "a debugging command",
}

// maxReads bounds Watched.Reads.
const maxReads = 5

// classify turns one command the script ran into findings, and notes in w
// the keys outside KEYS it only read.
func classify(ctx context.Context, srv watchServer, infos map[string]commandInfo, ob observed, callKeys []string, w *Watched) []Finding {
	if len(ob.args) == 0 {
		return nil
	}
	name := strings.ToLower(ob.args[0])
	info, ok := infos[name]
	if !ok {
		info = srv.info(ctx, name)
		infos[name] = info
	}
	shown := strings.ToUpper(name)
	if info.sub && len(ob.args) > 1 {
		sub := name + "|" + strings.ToLower(ob.args[1])
		shown += " " + strings.ToUpper(ob.args[1])
		if si, ok := infos[sub]; ok {
			info = si
		} else {
			si = srv.info(ctx, sub)
			if si.known {
				info = si
			}
			infos[sub] = info
		}
	}
	if what, ok := serverWide[name]; ok {
		return []Finding{{Command: shown, What: what}}
	}
	if ob.db > 0 {
		return []Finding{{Command: shown, What: fmt.Sprintf("ran in database %d, outside the run's namespace", ob.db)}}
	}
	if name == "copy" && slices.ContainsFunc(ob.args[1:], func(a string) bool { return strings.EqualFold(a, "db") }) {
		return []Finding{{Command: shown, What: "copies a key into another database"}}
	}
	switch {
	case info.flags["admin"] || info.categories["@admin"]:
		return []Finding{{Command: shown, What: "a server administration command"}}
	case info.categories["@dangerous"]:
		return []Finding{{Command: shown, What: "a command Redis itself classes as dangerous"}}
	}
	if info.known && info.noKeys {
		if info.flags["write"] {
			return []Finding{{Command: shown, What: "writes without naming a key"}}
		}
		return nil
	}
	uses, exact := srv.keysOf(ctx, ob, info)
	var out []Finding
	for _, u := range uses {
		if slices.Contains(callKeys, u.key) {
			continue
		}
		if !u.write {
			if len(w.Reads) < maxReads && !slices.Contains(w.Reads, u.key) {
				w.Reads = append(w.Reads, u.key)
			}
			continue
		}
		what := "writes a key outside its KEYS"
		if u.erase {
			what = "deletes a key outside its KEYS"
		}
		if !exact {
			what = "may write a key outside its KEYS: " + srv.describe() + " cannot tell which of its arguments are keys"
		}
		out = append(out, Finding{Command: shown, Key: u.key, What: what})
	}
	return out
}
