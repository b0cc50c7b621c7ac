package redisconn

import "os"

// spawnDirPrefix starts the name of every directory Spawn makes.
const spawnDirPrefix = "rlctl-redis-"

// lockOwner has no lock to take here: without it nothing is swept.
func lockOwner(string) (*os.File, error) { return nil, nil }

// sweepStale removes nothing here: without an owner lock a directory whose
// rlctl is gone cannot be told from one whose rlctl runs.
func sweepStale(string) {}

// startReaper starts nothing here: without an owner lock nothing can tell
// a reaper that rlctl is gone.
func startReaper(string) {}
