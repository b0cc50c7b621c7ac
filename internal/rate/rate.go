// Package rate parses and prints limits and rates written N/DURATION
// ("100/1m", "10/s", "5000/1h"). It is the one parser used by flags,
// scenario files and key schemas alike.
package rate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit is a count per window: a published limit (100 per minute) or an
// offered rate (400 per second).
type Limit struct {
	Count  int64
	Window time.Duration
}

// Parse reads "N/DURATION". The duration is a Go duration ("1m", "500ms")
// or a bare unit meaning one of it ("s", "m", "h", "ms"). N must be a
// positive integer and the window positive.
func Parse(s string) (Limit, error) {
	n, d, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Limit{}, fmt.Errorf("limit %q: want N/DURATION, e.g. 100/1m", s)
	}
	count, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
	if err != nil || count <= 0 {
		return Limit{}, fmt.Errorf("limit %q: count must be a positive integer", s)
	}
	w, err := parseWindow(strings.TrimSpace(d))
	if err != nil {
		return Limit{}, fmt.Errorf("limit %q: %w", s, err)
	}
	return Limit{Count: count, Window: w}, nil
}

func parseWindow(d string) (time.Duration, error) {
	if d == "" {
		return 0, errors.New("missing window duration")
	}
	if d[0] < '0' || d[0] > '9' {
		d = "1" + d // "s" means "1s"
	}
	w, err := time.ParseDuration(d)
	if err != nil {
		return 0, fmt.Errorf("window: %w", err)
	}
	if w <= 0 {
		return 0, errors.New("window must be positive")
	}
	return w, nil
}

// String prints the limit in the form Parse reads, with the shortest unit.
func (l Limit) String() string {
	if l.Window <= 0 {
		return fmt.Sprintf("%d/0s", l.Count)
	}
	return fmt.Sprintf("%d/%s", l.Count, shortDuration(l.Window))
}

// PerSecond is the limit as a rate per second.
func (l Limit) PerSecond() float64 {
	if l.Window <= 0 {
		return 0
	}
	return float64(l.Count) / l.Window.Seconds()
}

// Interval is the time between two events at this rate.
func (l Limit) Interval() time.Duration {
	if l.Count <= 0 {
		return 0
	}
	return l.Window / time.Duration(l.Count)
}

// IsZero reports whether no limit was set.
func (l Limit) IsZero() bool { return l.Count == 0 && l.Window == 0 }

func shortDuration(d time.Duration) string {
	switch {
	case d == time.Second:
		return "s"
	case d == time.Minute:
		return "m"
	case d == time.Hour:
		return "h"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// MarshalText implements encoding.TextMarshaler.
func (l Limit) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *Limit) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}
