package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// JobDirPrefix starts the name of every per-job working folder.
const JobDirPrefix = "vfx-job-"

// newJobDir creates a per-job folder in parent (os.TempDir() when empty)
// and holds an exclusive advisory lock on it until release is called. The
// kernel drops the lock when the process dies, however it dies, so
// SweepJobDirs can tell a folder in use from one a killed worker left.
func newJobDir(parent string) (dir string, release func(), err error) {
	for range 5 {
		dir, err = os.MkdirTemp(parent, JobDirPrefix)
		if err != nil {
			return "", nil, fmt.Errorf("worker: job folder: %w", err)
		}
		unlock, err := lockDir(dir)
		if errors.Is(err, errNoLocks) {
			unlock, err = func() {}, nil
		}
		if err == nil {
			return dir, func() {
				_ = os.RemoveAll(dir)
				unlock()
			}, nil
		}
		// A sweeper took it between MkdirTemp and the lock (it removes
		// it): make another.
		if !errors.Is(err, errLocked) && !errors.Is(err, os.ErrNotExist) {
			_ = os.RemoveAll(dir)
			return "", nil, fmt.Errorf("worker: job folder: %w", err)
		}
	}
	return "", nil, errors.New("worker: job folder: could not lock a new folder")
}

// SweepJobDirs removes the per-job folders in parent (os.TempDir() when
// empty) that no live process holds: those a killed worker left behind.
// Folders in use by any worker, on this or another process sharing the
// folder, are left alone. It returns the names removed. On systems
// without flock it removes nothing.
func SweepJobDirs(parent string) ([]string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil, fmt.Errorf("worker: sweep job folders: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), JobDirPrefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		unlock, err := lockDir(dir)
		if err != nil {
			if !errors.Is(err, errLocked) && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, errNoLocks) {
				errs = append(errs, err)
			}
			continue
		}
		err = os.RemoveAll(dir)
		unlock()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("worker: sweep job folders: %w", errors.Join(errs...))
	}
	return removed, nil
}

// errLocked: another process holds the folder's lock.
var errLocked = errors.New("folder locked by another process")

// errNoLocks: this system has no flock; nothing is swept.
var errNoLocks = errors.New("folder locks not supported")
