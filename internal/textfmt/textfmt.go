package textfmt

import (
	"math"
	"strconv"
	"strings"
)

// Num prints a figure the way a person reads it: integers without a
// fraction, others with at most three decimals (15.05, 0.253, 116.614).
func Num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatInt(int64(v), 10)
	}
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// Ratio prints a multiple of a published figure: "15.05×".
func Ratio(v float64) string { return Num(v) + "×" }

// Percent prints a share (0 to 1) as a percentage to three significant
// figures: 0.01 is "1%", 0.604 "60.4%", 1 "100%", 0.000123 "0.012%".
func Percent(share float64) string {
	v := 100 * share
	if v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
		p := math.Pow(10, 3-math.Ceil(math.Log10(math.Abs(v))))
		v = math.Round(v*p) / p
	}
	return Num(v) + "%"
}

// Count prints n with its noun in the right number: "1 key", "3 keys",
// "1 identity", "2 identities".
func Count[T int | int64 | uint64 | float64](n T, noun string) string {
	return Num(float64(n)) + " " + Plural(float64(n), noun)
}

// Plural is noun as it goes with n: the singular for exactly one, else the
// plural (English rules for the nouns rlctl prints).
func Plural(n float64, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "sh"), strings.HasSuffix(noun, "ch"):
		return noun + "es"
	}
	return noun + "s"
}

// Wrap breaks text into lines of at most width characters at spaces,
// collapsing runs of white space; a word longer than width gets a line of
// its own. Empty text gives no lines.
func Wrap(text string, width int) []string {
	var lines []string
	var cur strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		wn := len([]rune(w))
		if n > 0 && n+1+wn > width {
			lines = append(lines, cur.String())
			cur.Reset()
			n = 0
		}
		if n > 0 {
			cur.WriteByte(' ')
			n++
		}
		cur.WriteString(w)
		n += wn
	}
	if n > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}
