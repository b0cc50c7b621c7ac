package decision

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DecidedAtHeader carries a gateway's decision time: rlctl's own gateway
// sends it when Redis TIME decided, and any gateway can, to make a run's
// ceiling exact instead of bounded by each request's send and receive.
const DecidedAtHeader = "X-Ratelimit-Decided-At"

// DecidedByHeader carries which path decided (By's names), so fail-open
// and fallback decisions show through HTTP.
const DecidedByHeader = "X-Ratelimit-Decided-By"

// FormatDecidedAt writes t as DecidedAtHeader's value: Unix seconds with
// microseconds, Redis TIME's own precision.
func FormatDecidedAt(t time.Time) string {
	us := t.UnixMicro()
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

// ParseDecidedAt reads DecidedAtHeader's value: Unix seconds with up to
// nine decimals, or an RFC 3339 time. ok is false for anything else.
func ParseDecidedAt(v string) (t time.Time, ok bool) {
	v = strings.TrimSpace(v)
	if sec, frac, dot := strings.Cut(v, "."); allDigits(sec) && len(sec) <= 12 && len(frac) <= 9 && (!dot || allDigits(frac)) {
		s, _ := strconv.ParseInt(sec, 10, 64)
		ns := int64(0)
		if frac != "" {
			ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		}
		return time.Unix(s, ns), true
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
