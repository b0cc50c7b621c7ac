package limiter

import (
	_ "embed"

	"github.com/rlctl/rlctl/internal/design"
)

// redis-sliding-log's script keeps one sorted-set member per admission,
// each unique (a nonce per limiter and a counter); its ARGV are limit,
// window_ms, cost, now_us, member.
//
//go:embed lua/sliding_log.lua
var slidingLogLua string

func init() {
	registerLua(design.RedisSlidingLog, luaDesign{script: newScript(design.RedisSlidingLog, slidingLogLua), fixed: limitAndWindow, member: true})
}
