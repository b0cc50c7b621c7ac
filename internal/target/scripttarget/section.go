package scripttarget

import (
	"fmt"

	"github.com/rlctl/rlctl/internal/scenario"
)

// Config is a redis-script target's part of a scenario's target section.
type Config struct {
	// Script is the script's path, resolved relative to the scenario file;
	// Source is its text, read at load time.
	Script, Source string
	// Keys and Args are templates: {id}, {now_ms}, {limit}, {window_s} ...
	Keys, Args []string
	// Allowed is the rule on the script's reply that means allowed, like
	// "== 1" (ParseRule).
	Allowed string
	// RetryAfter says where a denied reply carries its retry-after, like
	// "[2] ms" (ParseRetryRule); empty: nowhere.
	RetryAfter string
}

// ConfigOf is t's redis-script section; the zero Config when t is of
// another kind.
func ConfigOf(t scenario.Target) *Config { return scenario.ConfigAs[Config](t) }

// section is the redis-script kind's part of the scenario format.
var section = scenario.Section{
	Kind: scenario.KindRedisScript,
	Doc:  "your own Lua limiter (target.script), run by simulated gateways with EVALSHA",
	New:  func() any { return &Config{} },
	Fields: func(d scenario.Decoder, _ *scenario.Target, v any) map[string]scenario.Handler {
		c := v.(*Config)
		return map[string]scenario.Handler{
			"script":      d.String(&c.Script),
			"keys":        d.Strings(&c.Keys),
			"args":        d.Strings(&c.Args),
			"allowed":     d.String(&c.Allowed),
			"retry_after": d.String(&c.RetryAfter),
		}
	},
	Docs:     docs,
	Validate: validate,
	Describe: func(t scenario.Target) string {
		return fmt.Sprintf("redis-script %s ×%d", ConfigOf(t).Script, t.Gateways)
	},
}

// validate checks the script, its key and argument templates and its
// reply rules with the parsers the target runs, and reads the script.
func validate(ck scenario.Check, sc *scenario.Scenario) {
	c := ConfigOf(sc.Target)
	bad := ck.Errorf
	if c.Script == "" {
		bad("target.script", "a redis-script target needs script (a Lua file, relative to this file)")
	} else if p, b, err := ck.ReadFile(c.Script); err != nil {
		bad("target.script", "read script: %v", err)
	} else {
		c.Script, c.Source = p, string(b)
	}
	if len(c.Keys) == 0 {
		bad("target.keys", "a redis-script target needs keys, like [\"rl:{id}\"]")
	}
	for _, f := range []struct {
		field string
		list  []string
	}{{"target.keys", c.Keys}, {"target.args", c.Args}} {
		for _, tp := range f.list {
			if err := CheckTemplate(tp); err != nil {
				bad(f.field, "%q: %v", tp, err)
			}
		}
	}
	if !ck.Set("target.allowed") {
		bad("target.allowed", "a redis-script target needs allowed, like \"== 1\"")
	} else if _, err := ParseRule(c.Allowed); err != nil {
		bad("target.allowed", "%v", err)
	}
	if c.RetryAfter != "" {
		if _, err := ParseRetryRule(c.RetryAfter); err != nil {
			bad("target.retry_after", "%v", err)
		}
	}
}

// docs document the redis-script kind's fields for rlctl help scenarios.
var docs = []scenario.FieldDoc{
	{Path: "target.script", Doc: "redis-script only: your Lua limiter, a path relative to the scenario file. Required there. On a Redis rlctl did not start (a URL) it is first run on a server rlctl starts, and refused before any traffic (exit 2, naming the command and key) if it writes or deletes a key outside its call's KEYS, calls a command on the whole server (FLUSHALL, SELECT, CONFIG …) or runs past a second; verify --allow-script-writes runs it anyway, and the report says rlctl cannot vouch for keys outside the run's namespace. A call that outlives target.timeout is stopped with SCRIPT KILL once Redis answers BUSY."},
	{Path: "target.keys", Doc: "redis-script only: KEYS templates, like [\"rl:{id}\"]; {id}, {now_ms}, {now_s}, {limit}, {window_s}, {window_ms}, {gateway} and {request_id} stand for their values. Required there."},
	{Path: "target.args", Doc: "redis-script only: ARGV templates, like [\"{limit}\", \"{window_s}\", \"{now_ms}\"]."},
	{Path: "target.allowed", Doc: "redis-script only: the rule on the script's reply that means allowed: \"== 1\", \"> 0\", \"[1] == 1\" (element 1 of a table reply), \"== 'OK'\", \"!= nil\". Required there. A reply the rule cannot read (a nested table where it reads a value, an error reply) is an error, never allowed."},
	{Path: "target.retry_after", Doc: "redis-script only: where a denied reply carries its retry-after: \"[2] ms\", \"[3] s\", \"ms\" or \"s\". Default: nowhere."},
}
