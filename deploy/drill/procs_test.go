//go:build linux

package drill

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one child process of the drill (nats-server, vfx api, vfx worker).
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *logBuf
	done chan struct{}
	err  error // the Wait result, once done is closed
}

// logBuf collects a process's output (bounded).
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *logBuf) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.buf.Len() > 16<<20 {
		return len(p), nil
	}
	return o.buf.Write(p)
}

func (o *logBuf) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// lines returns the decoded JSON log lines whose msg is msg.
func (o *logBuf) lines(msg string) []map[string]any {
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

// startProc starts bin with args; the process is killed when the test ends
// (and, through Pdeathsig, when the test binary dies).
func startProc(t *testing.T, name, bin string, args, env []string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	base := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VFX_") {
			base = append(base, kv)
		}
	}
	cmd.Env = append(base, env...)
	p := &proc{name: name, cmd: cmd, out: &logBuf{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if dir := os.Getenv("VFX_DRILL_LOGS"); dir != "" {
			_ = os.MkdirAll(dir, 0o755)
			_ = os.WriteFile(filepath.Join(dir, name+".log"), []byte(p.out.String()), 0o644)
		}
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", name, tail(p.out.String(), 5000))
		}
	})
	return p
}

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s to %s: %v", sig, p.name, err)
	}
}

// wait waits (bounded) for the process to exit and returns its exit code
// (-1 when killed by a signal).
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v", p.name, timeout)
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.name, p.err)
	return -1
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// eventually polls cond every 50 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v (last: %s)", what, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a free loopback TCP port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// buildBinaries builds bin/vfx and the nats-server of go.mod's
// github.com/nats-io/nats-server/v2 into dir (the Go build cache makes the
// second build quick). VFX_DRILL_BIN and VFX_NATS_SERVER_BIN name binaries
// built beforehand (make drill builds both).
func buildBinaries(t *testing.T, dir string) (vfx, natsServer string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := func(env, out, pkg string) string {
		if p := os.Getenv(env); p != "" {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("%s=%s: %v", env, p, err)
			}
			return p
		}
		path := filepath.Join(dir, out)
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", path, pkg)
		cmd.Dir = "../.." // module root (the test runs in deploy/drill)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		return path
	}
	return build("VFX_DRILL_BIN", "vfx", "./cmd/vfx"),
		build("VFX_NATS_SERVER_BIN", "nats-server", "github.com/nats-io/nats-server/v2")
}

// natsProc is the nats-server process, restartable on the same port and
// JetStream store.
type natsProc struct {
	bin, storeDir string
	port, monPort int
	p             *proc
	starts        int
}

func (n *natsProc) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

func (n *natsProc) start(t *testing.T) {
	t.Helper()
	n.starts++
	n.p = startProc(t, fmt.Sprintf("nats-server#%d", n.starts), n.bin, []string{
		"--addr", "127.0.0.1", "--port", fmt.Sprint(n.port), "--http_port", fmt.Sprint(n.monPort),
		"--jetstream", "--store_dir", n.storeDir, "--server_name", "drill-nats",
	}, nil)
	// /healthz answers 200 once JetStream has recovered its streams.
	eventually(t, 60*time.Second, "nats-server healthy", func() (bool, string) {
		if !n.p.running() {
			t.Fatalf("nats-server exited: %s", tail(n.p.out.String(), 3000))
		}
		res, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.monPort))
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, res.Status
	})
}

// restart stops the server gracefully (SIGTERM), waits, and starts it
// again on the same port and store directory.
func (n *natsProc) restart(t *testing.T, down time.Duration) {
	t.Helper()
	n.p.signal(t, syscall.SIGTERM)
	n.p.wait(t, 30*time.Second)
	time.Sleep(down)
	n.start(t)
}
