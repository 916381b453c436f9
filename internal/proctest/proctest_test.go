package proctest

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStartSignalWait runs a real shell: its output is captured, JSON log
// lines are found by msg, VFX_* variables do not leak in, and a signal ends
// it with the shell's exit code.
func TestStartSignalWait(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH: nothing to run")
	}
	t.Setenv("VFX_LEAK", "1")
	script := `echo '{"msg":"ready","n":1}'; echo "leak=${VFX_LEAK:-none} own=$OWN"; trap 'exit 3' TERM; while :; do sleep 0.05; done`
	p := Start(t, "sh", sh, []string{"-c", script}, []string{"OWN=yes"}, Options{})
	deadline := time.Now().Add(10 * time.Second)
	for len(p.Out.Lines("ready")) == 0 || !strings.Contains(p.Out.String(), "own=") {
		if time.Now().After(deadline) {
			t.Fatalf("no output: %q", p.Out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if l := p.Out.Lines("ready"); len(l) != 1 || l[0]["n"] != 1.0 {
		t.Fatalf("lines: %v", l)
	}
	if !strings.Contains(p.Out.String(), "leak=none own=yes") {
		t.Fatalf("environment: %q", p.Out.String())
	}
	if !p.Running() {
		t.Fatal("exited early")
	}
	p.Signal(t, syscall.SIGTERM)
	if code := p.Wait(t, 10*time.Second); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
	if p.Running() {
		t.Fatal("still running after Wait")
	}
}

func TestTail(t *testing.T) {
	if got := Tail("abcdef", 3); got != "…def" {
		t.Fatalf("Tail: %q", got)
	}
	if got := Tail("ab", 3); got != "ab" {
		t.Fatalf("Tail: %q", got)
	}
}
