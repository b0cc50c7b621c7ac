package cli

import (
	"fmt"
	"slices"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/workload"
)

// validAlgorithm reports whether a is a limiter design's name.
func validAlgorithm(a string) bool { return slices.Contains(design.Names(), a) }

// segmentFlag is --segment: a workload.Segment read by its one parser.
type segmentFlag struct{ seg *workload.Segment }

func (f segmentFlag) String() string {
	if f.seg == nil || f.seg.IsWhole() {
		return ""
	}
	return f.seg.String()
}

func (f segmentFlag) Set(s string) error {
	seg, err := workload.ParseSegment(s)
	if err != nil {
		return err
	}
	*f.seg = seg
	return nil
}

func (segmentFlag) Type() string { return "i/N|from:to" }

// startAtFlag is --start-at: an RFC 3339 instant.
type startAtFlag struct{ at *time.Time }

func (f startAtFlag) String() string {
	if f.at == nil || f.at.IsZero() {
		return ""
	}
	return f.at.UTC().Format(time.RFC3339Nano)
}

func (f startAtFlag) Set(s string) error {
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time like 2026-12-01T06:00:00Z: %w", err)
	}
	*f.at = at
	return nil
}

func (startAtFlag) Type() string { return "time" }
