package limiter

import (
	_ "embed"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/hotpath"
)

// preludeLua is shared by every script: each is prelude + body, so the
// body can call now_of. redis.NewScript computes the SHA once; Script.Run
// sends EVALSHA and falls back to EVAL (which also loads it) on NOSCRIPT.
//
//go:embed lua/prelude.lua
var preludeLua string

// sources holds every Lua source by design name, prelude included; each
// design's file adds its own through newScript.
var sources = map[string]string{}

// luaScript is one design's script, for both clients: go-redis's and the
// hotpath decision path's, each hashed once.
type luaScript struct {
	redis *redis.Script
	hot   *hotpath.Script
}

// newScript records the Lua body of the named design and returns it ready
// to run.
func newScript(name, body string) luaScript {
	src := preludeLua + body
	sources[name] = src
	return luaScript{redis: redis.NewScript(src), hot: hotpath.NewScript(src)}
}

// Scripts returns every Lua source by algorithm name, prelude included, for
// tools that want to show or pre-load what rlctl runs.
func Scripts() map[string]string {
	out := make(map[string]string, len(sources))
	for k, v := range sources {
		out[k] = v
	}
	return out
}
