package keyspace

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// fitLua defines fits(key, spec), which the scripts that change keys
// (repair_ttl.lua, reset.lua) call right before the change.
//
//go:embed fit.lua
var fitLua string

// fitSpec says what a key of s (named p, of type typ) must hold before a
// script may change it, in fit.lua's terms: a counter an integer, a TAT or
// a bucket's fields numbers, a list of times numbers. A name and type
// alone do not make a key a limiter's: rl:fw:notlimiter holding "plain"
// is another application's key under rlctl's prefix.
func (s *Schema) fitSpec(p Parsed, typ string) string {
	if s.values != nil {
		if spec := s.values(p, typ); spec != "" {
			return spec
		}
	}
	switch typ {
	case TypeString:
		return "string int"
	case TypeHash:
		return "hash any"
	case TypeZSet:
		return "zset any"
	case TypeList:
		return "list num 0"
	}
	return typ + " none" // fits nothing
}

//go:embed fit_check.lua
var fitCheckLua string

// fitCheckScript tells, without changing anything, which keys fit.
var fitCheckScript = redis.NewScript(fitLua + fitCheckLua)

// fitCand is a key to check and the specs it may fit.
type fitCand struct {
	key   string
	specs []string
}

// checkFits asks n which of cands fit one of their specs, in calls of at
// most ScriptChunk keys.
func checkFits(ctx context.Context, n Node, cands []fitCand) ([]bool, error) {
	out := make([]bool, 0, len(cands))
	for len(cands) > 0 {
		chunk := cands[:min(len(cands), ScriptChunk)]
		cands = cands[len(chunk):]
		var args []any
		for _, c := range chunk {
			args = append(args, c.key, len(c.specs))
			for _, s := range c.specs {
				args = append(args, s)
			}
		}
		res, err := fitCheckScript.Run(ctx, n.Client, nil, args...).Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("check values on %s: %w", n.Addr, err)
		}
		if len(res) != len(chunk) {
			return nil, fmt.Errorf("check values on %s: bad reply", n.Addr)
		}
		for _, v := range res {
			out = append(out, v == 1)
		}
	}
	return out, nil
}

// listOfTimes is the spec of a list of at most n times.
func listOfTimes(n int64) string { return "list num " + strconv.FormatInt(n, 10) }

// fitSpecs lists the specs of every schema that claims key (of type typ)
// by name and type, without repeats: a key fits when it fits one of them.
func fitSpecs(schemas []*Schema, key, typ string) []string {
	var out []string
	for _, s := range schemas {
		p, ok := s.Parse(key, typ)
		if !ok {
			continue
		}
		spec := s.fitSpec(p, typ)
		dup := false
		for _, o := range out {
			dup = dup || o == spec
		}
		if !dup {
			out = append(out, spec)
		}
	}
	return out
}

// once wraps a command so go-redis never sends it a second time. After a
// lost reply (a timeout, a dropped connection) the first attempt may have
// been applied: a retry would then find the change made and report it as
// someone else's, or apply it twice.
type once struct{ *redis.Cmd }

// NoRetry tells go-redis not to retry the command.
func (once) NoRetry() bool { return true }
