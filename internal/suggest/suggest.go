package suggest

import (
	"fmt"
	"slices"
	"strings"
)

// Max is how many names Nearest returns at most: more reads as a list,
// not a suggestion.
const Max = 3

// Nearest returns the names close to typed, nearest first (names keep
// their order among equals): those within a few edits of it (a letter
// added, dropped, changed or two swapped; two edits, three for a name of
// eight letters or more), those it is a prefix of or contained in, and
// those that begin it (p99 for p99_latency). Case does not count (a name
// that differs only in case is the one suggestion), and the name itself is
// none. Nil when nothing is close.
func Nearest(typed string, names []string) []string {
	t := strings.ToLower(typed)
	if t == "" {
		return nil
	}
	var sameLetters []string
	for _, n := range names {
		if n != typed && strings.EqualFold(n, typed) && !slices.Contains(sameLetters, n) {
			sameLetters = append(sameLetters, n)
		}
	}
	if len(sameLetters) > 0 {
		return sameLetters // only the case was wrong: nothing else is as near
	}
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, n := range names {
		if n == typed {
			continue
		}
		l := strings.ToLower(n)
		d := distance(t, l)
		limit := 2
		if len(t) >= 8 {
			limit = 3
		}
		switch {
		case d <= limit:
		case len(t) >= 2 && strings.HasPrefix(l, t), len(t) >= 3 && strings.Contains(l, t), len(l) >= 3 && strings.HasPrefix(t, l):
			d = limit + 1 // after every near miss
		default:
			continue
		}
		cs = append(cs, cand{n, d})
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	out := make([]string, 0, min(len(cs), Max))
	for _, c := range cs {
		if len(out) == Max {
			break
		}
		if !slices.Contains(out, c.name) {
			out = append(out, c.name)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// DidYouMean is "; did you mean "a"?" (or "a" or "b") for the names
// nearest to typed, "" when none is close.
func DidYouMean(typed string, names []string) string {
	near := Nearest(typed, names)
	if len(near) == 0 {
		return ""
	}
	return "; did you mean " + Or(near) + "?"
}

// Or joins names quoted: "a", "a" or "b", "a", "b" or "c".
func Or(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// distance is the optimal string alignment distance between a and b
// (bytes): insertions, deletions, substitutions and swaps of two
// neighbours, each one edit.
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
