package proctest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDescendantsFindsOrphan: with the test process a subreaper, a
// grandchild left behind by a shell that exited is found, killed and
// reaped; afterwards nothing is left.
func TestDescendantsFindsOrphan(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH: nothing to run")
	}
	BecomeSubreaper(t)
	p := Start(t, "parent", sh, []string{"-c", "sleep 30 >/dev/null 2>&1 & echo $!"}, nil, Options{})
	if code := p.Wait(t, 10*time.Second); code != 0 {
		t.Fatalf("sh exit %d", code)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(p.Out.String()))
	if err != nil {
		t.Fatalf("sh printed %q", p.Out.String())
	}
	left, err := KillDescendants(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range left {
		found = found || d.PID == orphan && d.Comm == "sleep" && d.PPID == os.Getpid()
	}
	if !found {
		t.Fatalf("descendants %v: want the orphaned sleep %d, re-parented to this process", left, orphan)
	}
	if err := syscall.Kill(orphan, 0); err != syscall.ESRCH {
		t.Fatalf("orphan %d after KillDescendants: kill(0) = %v, want ESRCH (killed and reaped)", orphan, err)
	}
	if again, err := Descendants(os.Getpid()); err != nil || len(again) != 0 {
		t.Fatalf("descendants after the kill: %v, %v", again, err)
	}
}
