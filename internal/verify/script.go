package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/rundir"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target/scripttarget"
)

// watchedFindings is how many of a watch's findings a message lists.
const watchedFindings = 5

// guardScript stands between a user's script and a Redis rlctl did not
// start (ns set: the run has a namespace there). rlctl namespaces the keys
// it hands the script, but the script runs whatever it was written to, so
// it is first run on a server rlctl starts and watched
// (scripttarget.Watch): anything it does beyond each call's KEYS, or to
// the whole server, refuses the scenario before any traffic (exit 2,
// naming the command and the key) unless --allow-script-writes. The run's
// keys are then deleted after the run like any run's, and the notes say
// what rlctl can vouch for: "nothing else was written or deleted" only when
// the watch saw every call end touching nothing but its KEYS.
func (e *env) guardScript(ctx context.Context, sc *scenario.Scenario, o Options, cfg *redisconn.Config, templates []string, keys keyspace.Patterns, ns string) error {
	if ns == "" {
		return nil // a Redis rlctl started: every key there is the run's
	}
	ids := []string{"user-0"}
	for i := 1; i < min(sc.Traffic.Identities, 3); i++ {
		ids = append(ids, fmt.Sprintf("user-%d", i))
	}
	w, err := scripttarget.Watch(ctx, scripttarget.WatchOptions{
		Source: sc.Target.ScriptSource, Keys: templates, Args: sc.Target.Args, Limit: sc.Limit,
		Identities: ids, Gateways: sc.Target.Gateways, Timeout: sc.Target.Timeout,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", sc.Name, err)
	}
	if len(w.Findings) > 0 && !o.AllowScriptWrites {
		return exitcode.With(fmt.Errorf("%s: target.script %s refused before any traffic: run first on %s, the script called %s; on a Redis rlctl did not start a script may write and delete only the keys it is given (name every key it writes in target.keys, or --allow-script-writes runs it anyway)",
			sc.Name, sc.Target.Script, w.Coverage(), w.Describe(watchedFindings)), exitcode.Usage)
	}
	e.closers = append(e.closers, cleanup(cfg, keys))
	e.notes = append(e.notes, scriptNotes(w, keys)...)
	return nil
}

// scriptNotes say where a script run on a shared Redis wrote, and how far
// rlctl can vouch for the rest.
func scriptNotes(w *scripttarget.Watched, keys keyspace.Patterns) []string {
	where := fmt.Sprintf("on the given Redis every key rlctl handed the script lay in a namespace of this run's own (%s), deleted after the run", strings.Join(keys, ", "))
	var notes []string
	switch {
	case len(w.Findings) > 0:
		notes = append(notes, fmt.Sprintf("rlctl cannot vouch for keys outside this run's namespace: run first on %s, the script called %s, and --allow-script-writes let it run on the given Redis anyway; %s", w.Coverage(), w.Describe(watchedFindings), where))
	case w.Failed > 0:
		notes = append(notes, fmt.Sprintf("%s; rlctl cannot vouch for keys outside it: run first on %s, %d of its calls failed there (the first: %s), so what the script does past that error was not seen", where, w.Coverage(), w.Failed, w.FirstError))
	default:
		notes = append(notes, fmt.Sprintf("%s; run first on %s, the script wrote and deleted only the keys each call was given: nothing else was written or deleted", where, w.Coverage()))
	}
	if len(w.Reads) > 0 {
		notes = append(notes, fmt.Sprintf("the script read keys outside its KEYS (%s): rlctl wrote nothing there, but the script's decisions rest on data outside the run's namespace", strings.Join(w.Reads, ", ")))
	}
	return notes
}

// settleScript waits, once the traffic is over, until every script a
// timed-out call of the redis-script target left running was looked into,
// and adds what was done to the notes (see scripttarget.Settler). The error
// says a script could not be stopped.
func (e *env) settleScript(s *rundir.Saved) error {
	if e.script == nil {
		return nil
	}
	notes, err := e.script.Settle()
	s.Notes = append(s.Notes, notes...)
	return err
}
