package limiter

import (
	_ "embed"

	"github.com/rlctl/rlctl/internal/design"
)

// redis-sliding-window's script blends the current and previous windows'
// counters; its ARGV are limit, window_ms, cost, now_us.
//
//go:embed lua/sliding_window.lua
var slidingWindowLua string

func init() {
	registerLua(design.RedisSlidingWindow, luaDesign{script: newScript(design.RedisSlidingWindow, slidingWindowLua), fixed: limitAndWindow})
}
