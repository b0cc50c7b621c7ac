package limiter

import (
	_ "embed"

	"github.com/rlctl/rlctl/internal/design"
)

// redis-fixed-window's script checks and increments in one step; its ARGV
// are limit, window_ms, cost (no clock: the window is the key's TTL).
//
//go:embed lua/fixed_window.lua
var fixedWindowLua string

func init() {
	registerLua(design.RedisFixedWindow, luaDesign{script: newScript(design.RedisFixedWindow, fixedWindowLua), fixed: limitAndWindow})
}
