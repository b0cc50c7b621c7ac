package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// AllowedRule says which reply of a user's Lua limiter means "allowed":
// the reply (or, for a table reply, its first element) compared with Value.
type AllowedRule struct {
	Op Op
	// Value is a number, or a string when Number is false ("OK").
	Value  string
	Number bool
	num    float64
}

// ParseAllowed reads a rule like "== 1", "> 0" or "== OK". Ordering
// operators need a number.
func ParseAllowed(s string) (AllowedRule, error) {
	s = strings.TrimSpace(s)
	for _, op := range []Op{LessEqual, GreaterEqual, Equal, NotEqual, Less, Greater} {
		rest, ok := strings.CutPrefix(s, string(op))
		if !ok {
			continue
		}
		v := strings.Trim(strings.TrimSpace(rest), `"'`)
		if v == "" {
			break
		}
		r := AllowedRule{Op: op, Value: v}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			r.Number, r.num = true, f
		} else if op != Equal && op != NotEqual {
			return AllowedRule{}, fmt.Errorf("allowed %q: %s needs a number", s, op)
		}
		return r, nil
	}
	return AllowedRule{}, fmt.Errorf("allowed %q: want OP VALUE, like \"== 1\" (OP one of < <= > >= == !=)", s)
}

// Match reports whether a script reply means allowed. reply is what the
// Redis client returned: int64, string, []any (first element used), or nil.
func (r AllowedRule) Match(reply any) bool {
	if list, ok := reply.([]any); ok {
		if len(list) == 0 {
			return false
		}
		reply = list[0]
	}
	var s string
	switch v := reply.(type) {
	case int64:
		s = strconv.FormatInt(v, 10)
	case string:
		s = v
	case float64:
		s = strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		// Lua true becomes integer 1 and false becomes nil over RESP2;
		// RESP3 clients may hand back a bool.
		if v {
			s = "1"
		} else {
			return false
		}
	default:
		return false
	}
	if r.Number {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return r.Op == NotEqual
		}
		return r.Op.holds(f, r.num)
	}
	switch r.Op {
	case Equal:
		return s == r.Value
	case NotEqual:
		return s != r.Value
	}
	return false
}
