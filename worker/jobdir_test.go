//go:build unix

package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestSweepJobDirs: a folder whose lock is held (a live job, here in this
// process) stays; a folder whose owner is gone (a process that locked it
// and was killed) and a bare one are removed; other names are left alone.
func TestSweepJobDirs(t *testing.T) {
	parent := t.TempDir()
	live, release, err := newJobDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := os.WriteFile(filepath.Join(live, "in.mp4"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A child process locks a folder, then is killed: the kernel drops the
	// lock, as for a SIGKILLed worker.
	dead := filepath.Join(parent, JobDirPrefix+"dead")
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	flockBin, err := exec.LookPath("flock")
	if err == nil {
		cmd := exec.Command(flockBin, "--nonblock", "--no-fork", dead, "sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// While the child holds it, the folder is not swept.
		waitLocked(t, dead)
		if got, err := SweepJobDirs(parent); err != nil || len(got) != 0 {
			t.Fatalf("sweep while locked: %v, %v; want nothing removed", got, err)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	bare := filepath.Join(parent, JobDirPrefix+"bare")
	other := filepath.Join(parent, "keep-me")
	for _, d := range []string{bare, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	got, err := SweepJobDirs(parent)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{JobDirPrefix + "bare", JobDirPrefix + "dead"}
	if !slices.Equal(got, want) {
		t.Errorf("removed %v, want %v", got, want)
	}
	for _, d := range []string{live, other, filepath.Join(live, "in.mp4")} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v (must stay)", d, err)
		}
	}
	release()
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("release left %s (%v)", live, err)
	}
}

// waitLocked waits (bounded) until dir's lock is held by someone else.
func waitLocked(t *testing.T, dir string) {
	t.Helper()
	for range 1000 {
		unlock, err := lockDir(dir)
		if err == errLocked {
			return
		}
		if err == nil {
			unlock()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the child never took the lock")
}
