// Package proctest runs the vfx binaries (and servers such as nats-server)
// as child processes in tests: environment without the caller's VFX_*
// variables, bounded output capture with JSON log-line lookup, kill at the
// end of the test (and, on Linux, when the test binary dies), signals and
// bounded waits. Only tests import it.
package proctest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxLog bounds the output kept per process.
const maxLog = 16 << 20

// Log collects a process's output (bounded to 16 MiB; later output is
// dropped). It is safe for concurrent use.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Log) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.buf.Len() > maxLog {
		return len(p), nil
	}
	return o.buf.Write(p)
}

// String returns the output so far.
func (o *Log) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Lines returns the decoded JSON (zap) log lines whose msg is msg.
func (o *Log) Lines(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(o.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Proc is one child process.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Out  *Log // stdout and stderr
	done chan struct{}
	err  error // the Wait result, once done is closed
}

// Options of Start.
type Options struct {
	// LogDir, when set, receives <name>.log with the whole output when the
	// test ends.
	LogDir string
	// Tail is how many bytes of output a failed test logs (0: 5000).
	Tail int
}

// Start starts bin with args in an environment made of the test process's
// variables except VFX_* ones, plus env. The process is killed when the
// test ends; a failed test logs the tail of its output.
func Start(t testing.TB, name, bin string, args, env []string, o Options) *Proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VFX_") {
			base = append(base, kv)
		}
	}
	cmd.Env = append(base, env...)
	p := &Proc{Name: name, Cmd: cmd, Out: &Log{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Out, p.Out
	dieWithParent(cmd)
	// A grandchild that keeps the output pipe open must not keep Wait from
	// returning once the process itself has exited.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if o.LogDir != "" {
			_ = os.MkdirAll(o.LogDir, 0o755)
			_ = os.WriteFile(filepath.Join(o.LogDir, name+".log"), []byte(p.Out.String()), 0o644)
		}
		if t.Failed() {
			n := o.Tail
			if n <= 0 {
				n = 5000
			}
			t.Logf("%s output (tail):\n%s", name, Tail(p.Out.String(), n))
		}
	})
	return p
}

// Kill kills the process (if it still runs) and waits for it.
func (p *Proc) Kill() {
	select {
	case <-p.done:
	default:
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Signal sends sig to the process.
func (p *Proc) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s to %s: %v", sig, p.Name, err)
	}
}

// Stop ends the process at the end of a test: it sends sig unless the
// process has already exited (signalling a process that is gone is not an
// error here), waits at most timeout, and returns the exit code (-1 when a
// signal killed it) and whether the process had already exited before Stop
// was called. Whether anything outlives the test is CheckNoDescendants's
// question, not Stop's.
func (p *Proc) Stop(t testing.TB, sig os.Signal, timeout time.Duration) (code int, exitedBefore bool) {
	t.Helper()
	if !p.Running() {
		return p.Wait(t, 0), true
	}
	// The process may exit between Running and Signal: os.ErrProcessDone
	// then, which Wait below settles.
	if err := p.Cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("signal %s to %s: %v", sig, p.Name, err)
	}
	return p.Wait(t, timeout), false
}

// Wait waits at most timeout for the process to exit and returns its exit
// code (-1 when a signal killed it).
func (p *Proc) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	default:
		select {
		case <-p.done:
		case <-timer.C:
			t.Fatalf("%s did not exit within %v", p.Name, timeout)
		}
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.Name, p.err)
	return -1
}

// Tail returns the last n bytes of s, marked with "…" when cut.
func Tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
