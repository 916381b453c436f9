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

// TestStopAfterExit: Stop on a process that has already exited does not
// signal it and reports its exit code; Stop on a running one signals it.
func TestStopAfterExit(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH: nothing to run")
	}
	p := Start(t, "quick", sh, []string{"-c", "exit 4"}, nil, Options{})
	if code := p.Wait(t, 10*time.Second); code != 4 {
		t.Fatalf("exit code %d, want 4", code)
	}
	// Signal would fail now (os: process already finished); Stop does not.
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err == nil {
		t.Fatal("signalling an exited process succeeded: this test no longer reproduces the drill's teardown failure")
	}
	if code, before := p.Stop(t, syscall.SIGTERM, time.Second); code != 4 || !before {
		t.Fatalf("Stop of an exited process: code %d, exited before %v; want 4, true", code, before)
	}
	r := Start(t, "running", sh, []string{"-c", "trap 'exit 5' TERM; while :; do sleep 0.05; done"}, nil, Options{})
	time.Sleep(100 * time.Millisecond) // let the shell set its trap
	if code, before := r.Stop(t, syscall.SIGTERM, 10*time.Second); code != 5 || before {
		t.Fatalf("Stop of a running process: code %d, exited before %v; want 5, false", code, before)
	}
}
