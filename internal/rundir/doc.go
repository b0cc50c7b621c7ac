// Package rundir is a run's directory and what re-scoring it needs: each
// scenario's history saved beside the reports with its scoring inputs
// (Saved), a history turned into its scenario's report through the
// analysis and the judge (Score), and saved runs read back, re-scored
// and merged (OpenRunDir, Rescore). verify writes run directories as it
// runs; report render and report merge read them without running
// anything.
package rundir
