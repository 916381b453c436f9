//go:build unix

package worker

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes a non-blocking exclusive flock on dir; errLocked when
// another open file description holds it.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	// Removed by a sweeper between Open and Flock: not ours any more.
	if _, err := os.Stat(dir); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
