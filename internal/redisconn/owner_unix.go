//go:build unix

package redisconn

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// spawnDirPrefix starts the name of every directory Spawn makes.
const spawnDirPrefix = "rlctl-redis-"

// ownerFile is the file in a spawn directory that its rlctl holds locked
// for as long as the deployment lives. The kernel drops the lock when
// that rlctl dies, however it dies, and in whatever pid namespace.
const ownerFile = "owner.lock"

// lockOwner makes dir's owner file and locks it. The file is locked under
// another name first and then renamed, so a sweeper never sees it unlocked.
func lockOwner(dir string) (*os.File, error) {
	tmp := filepath.Join(dir, ownerFile+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ownerFile)); err != nil {
		f.Close()
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	return f, nil
}

// sweepStale removes the spawn directories in parent (the system's
// temporary directory when empty) whose owner is gone: an rlctl killed
// outright cannot remove its own. Only a directory with an owner file
// that nobody holds is removed; any other is left as it is.
func sweepStale(parent string) {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), spawnDirPrefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_RDWR, 0)
		if err != nil {
			continue // none (not ours, or from an older rlctl): leave it
		}
		// Held means its rlctl lives; any other failure cannot tell.
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}
