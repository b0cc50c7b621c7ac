package scripttarget

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault/inject"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target"
)

func init() {
	target.Register(target.Kind{Name: scenario.KindRedisScript, Section: section, Build: build})
}

// build opens the script's Redis, watches the script first when that Redis
// is not rlctl's own (guard), sets up s's faults and loads the script on
// every simulated gateway's client.
func build(ctx context.Context, s target.Spec) (*target.Built, error) {
	b := &target.Built{Embedded: s.Redis == "" || s.Redis == scenario.RedisEmbedded}
	c := ConfigOf(s.Target)
	ok := false
	defer b.Closing(&ok)()
	if err := inject.Refuse(s.FaultPlan(), s.Redis, s.AllowFailover); err != nil {
		return nil, err
	}
	cfg, stop, err := target.OpenRedis(ctx, s, inject.NeedsReplica(s.FaultPlan()))
	if err != nil {
		return nil, err
	}
	b.Defer(stop)
	b.Redis, b.Clock = cfg, target.RedisClock(cfg)
	ns := target.Namespace(s.Redis)
	templates, keys, err := namespaced(c.Keys, ns)
	if err != nil {
		return nil, exitcode.With(fmt.Errorf("%s: redis-script target: %w", s.Name, err), exitcode.Usage)
	}
	if err := guard(ctx, b, s, cfg, templates, keys, ns); err != nil {
		return nil, err
	}
	b.RecordShards(ctx, s, cfg, func(id string) (string, error) {
		return ExpandKey(templates[0], id, s.Limit, time.Now())
	})
	newClient := cfg.NewClient
	if len(s.Faults) > 0 {
		if newClient, err = b.WithFaults(ctx, s, inject.Setup{Spec: s.Redis, Redis: cfg, Options: s.RedisOptions, Keys: keys, Prefix: ns}); err != nil {
			return nil, err
		}
	}
	t, err := New(ctx, Options{
		Source: c.Source, Gateways: s.Target.Gateways,
		NewClient: newClient, Keys: templates, Args: c.Args,
		Allowed: c.Allowed, RetryAfter: c.RetryAfter, Limit: s.Limit, Timeout: s.Target.Timeout,
		Control: cfg.NewClient,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: redis-script target: %w", s.Name, err)
	}
	b.Target = t
	b.Defer(t.Close)
	b.KeyBySource(s)
	// Once the traffic is over, every script a timed-out call left running
	// is looked into, and what was done goes into the notes.
	b.OnFinish(func(_ context.Context, _ *history.History, f *target.Finished) {
		notes, err := t.(Settler).Settle()
		f.Notes = append(f.Notes, notes...)
		if err != nil {
			f.Stuck = err.Error()
		}
	})
	ok = true
	return b, nil
}

// namespaced namespaces a redis-script target's key templates (when ns is
// set) and returns them with the patterns of the keys they render.
func namespaced(templates []string, ns string) ([]string, keyspace.Patterns, error) {
	out := make([]string, len(templates))
	var keys keyspace.Patterns
	for i, tpl := range templates {
		nsTpl, fixed, exact, err := NamespaceTemplate(tpl, ns)
		if err != nil {
			return nil, nil, err
		}
		out[i] = tpl
		if ns != "" {
			out[i] = nsTpl
		}
		if exact {
			keys = append(keys, keyspace.EscapeGlob(fixed))
		} else {
			keys = append(keys, keyspace.EscapeGlob(fixed)+"*")
		}
	}
	return out, keys, nil
}

// watchedFindings is how many of a watch's findings a message lists.
const watchedFindings = 5

// guard stands between a user's script and a Redis rlctl did not start
// (ns set: the run has a namespace there). rlctl namespaces the keys it
// hands the script, but the script runs whatever it was written to, so it
// is first run on a server rlctl starts and watched (Watch): anything it
// does beyond each call's KEYS, or to the whole server, refuses the
// scenario before any traffic (exit 2, naming the command and the key)
// unless --allow-script-writes. The run's keys are then deleted after the
// run like any run's, and the notes say what rlctl can vouch for: "nothing
// else was written or deleted" only when the watch saw every call end
// touching nothing but its KEYS.
func guard(ctx context.Context, b *target.Built, s target.Spec, cfg *redisconn.Config, templates []string, keys keyspace.Patterns, ns string) error {
	if ns == "" {
		return nil // a Redis rlctl started: every key there is the run's
	}
	c := ConfigOf(s.Target)
	ids := []string{"user-0"}
	for i := 1; i < min(s.Identities, 3); i++ {
		ids = append(ids, fmt.Sprintf("user-%d", i))
	}
	w, err := Watch(ctx, WatchOptions{
		Source: c.Source, Keys: templates, Args: c.Args, Limit: s.Limit,
		Identities: ids, Gateways: s.Target.Gateways, Timeout: s.Target.Timeout,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	if len(w.Findings) > 0 && !s.AllowScriptWrites {
		return s.Errorf("target.script %s refused before any traffic: run first on %s, the script called %s; on a Redis rlctl did not start a script may write and delete only the keys it is given (name every key it writes in target.keys, or --allow-script-writes runs it anyway)",
			c.Script, w.Coverage(), w.Describe(watchedFindings))
	}
	b.Defer(target.Cleanup(cfg, keys))
	b.Notes = append(b.Notes, watchNotes(w, keys)...)
	return nil
}

// watchNotes say where a script run on a shared Redis wrote, and how far
// rlctl can vouch for the rest.
func watchNotes(w *Watched, keys keyspace.Patterns) []string {
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
