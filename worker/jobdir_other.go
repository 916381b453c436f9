//go:build !unix

package worker

// lockDir locks nothing where flock is missing: job folders still work,
// SweepJobDirs removes nothing.
func lockDir(string) (func(), error) { return nil, errNoLocks }
