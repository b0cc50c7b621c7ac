package limiter

import (
	_ "embed"

	"github.com/rlctl/rlctl/internal/design"
)

// redis-clock-window's script keys each window by floor(now_ms/W); its
// ARGV are limit, window_ms, cost, now_us.
//
//go:embed lua/clock_window.lua
var clockWindowLua string

func init() {
	registerLua(design.RedisClockWindow, luaDesign{script: newScript(design.RedisClockWindow, clockWindowLua), fixed: limitAndWindow})
}
