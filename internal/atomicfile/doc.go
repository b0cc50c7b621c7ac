// Package atomicfile writes files so a reader sees either the old file or
// the whole new one, never a torn one: the data goes to a temporary file in
// the same directory, is synced, and is renamed over the final name. Run
// reports, saved histories and their scoring inputs all go through it.
package atomicfile
