// Package report holds the report of one `rlctl verify` run and writes it in
// every format: report.json (the versioned contract other tools read),
// report.md, junit.xml (one test case per threshold), a self-contained
// report.html with inline SVG charts, and the terminal table.
//
// A Report is plain data built by the runner; the writers never measure
// anything. WriteDir writes each file to a temporary file in the directory
// and renames it into place, so a reader never sees half a report.
package report
