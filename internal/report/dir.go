package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rlctl/rlctl/internal/atomicfile"
)

// Formats lists the file formats WriteDir knows, and their file names.
var Formats = map[string]string{
	"json":  "report.json",
	"md":    "report.md",
	"junit": "junit.xml",
	"html":  "report.html",
}

// AllFormats is every format, in the order WriteDir writes them.
var AllFormats = []string{"json", "md", "junit", "html"}

// WriteDir writes r into dir (created if missing) in each of formats
// ("json", "md", "junit", "html"). Each file is rendered in memory, written
// to a temporary file in dir, synced and renamed over its final name, so a
// reader sees the old file or the whole new one, never a torn one.
func WriteDir(dir string, r *Report, formats []string) error {
	for _, f := range formats {
		if _, ok := Formats[f]; !ok {
			return fmt.Errorf("write report: unknown format %q (want json, md, junit or html)", f)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report directory: %w", err)
	}
	for _, f := range formats {
		var buf bytes.Buffer
		if err := render(f, &buf, r); err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(dir, Formats[f]), buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

func render(format string, w io.Writer, r *Report) error {
	switch format {
	case "json":
		return JSON(w, r)
	case "md":
		return Markdown(w, r)
	case "junit":
		return JUnit(w, r)
	case "html":
		return HTML(w, r)
	}
	return fmt.Errorf("unknown report format %q", format)
}
