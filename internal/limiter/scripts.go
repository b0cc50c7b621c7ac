package limiter

import (
	_ "embed"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/resp"
)

// The Lua sources. Each script is prelude + body, so the body can call
// now_of. redis.NewScript computes the SHA once; Script.Run sends EVALSHA
// and falls back to EVAL (which also loads it) on NOSCRIPT.
var (
	//go:embed lua/prelude.lua
	preludeLua string
	//go:embed lua/fixed_window.lua
	fixedWindowLua string
	//go:embed lua/fixed_window_refresh.lua
	fixedWindowRefreshLua string
	//go:embed lua/clock_window.lua
	clockWindowLua string
	//go:embed lua/token_bucket.lua
	tokenBucketLua string
	//go:embed lua/sliding_window.lua
	slidingWindowLua string
	//go:embed lua/sliding_log.lua
	slidingLogLua string
	//go:embed lua/gcra.lua
	gcraLua string
	//go:embed lua/lease.lua
	leaseLua string
)

var (
	fixedWindowScript        = redis.NewScript(preludeLua + fixedWindowLua)
	fixedWindowRefreshScript = redis.NewScript(preludeLua + fixedWindowRefreshLua)
	clockWindowScript        = redis.NewScript(preludeLua + clockWindowLua)
	tokenBucketScript        = redis.NewScript(preludeLua + tokenBucketLua)
	slidingWindowScript      = redis.NewScript(preludeLua + slidingWindowLua)
	slidingLogScript         = redis.NewScript(preludeLua + slidingLogLua)
	gcraScript               = redis.NewScript(preludeLua + gcraLua)
	leaseScript              = redis.NewScript(preludeLua + leaseLua)
)

// Scripts returns every Lua source by algorithm name, prelude included, for
// tools that want to show or pre-load what rlctl runs.
func Scripts() map[string]string {
	return map[string]string{
		RedisFixedWindow:        preludeLua + fixedWindowLua,
		RedisFixedWindowRefresh: preludeLua + fixedWindowRefreshLua,
		RedisClockWindow:        preludeLua + clockWindowLua,
		RedisTokenBucket:        preludeLua + tokenBucketLua,
		RedisSlidingWindow:      preludeLua + slidingWindowLua,
		RedisSlidingLog:         preludeLua + slidingLogLua,
		RedisGCRA:               preludeLua + gcraLua,
		Leasing:                 preludeLua + leaseLua,
	}
}

// respScripts are the same scripts for the resp decision path, hashed once.
var respScripts = func() map[string]*resp.Script {
	m := map[string]*resp.Script{}
	for algo, src := range Scripts() {
		m[algo] = resp.NewScript(src)
	}
	return m
}()
