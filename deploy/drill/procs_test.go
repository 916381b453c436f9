//go:build linux

package drill

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/vfxrender/vfx/internal/proctest"
)

// proc is one child process of the drill (nats-server, vfx api, vfx worker).
type proc = proctest.Proc

// startProc starts bin with args; the process is killed when the test ends
// (and, through Pdeathsig, when the test binary dies). VFX_DRILL_LOGS names
// a folder that receives every process's whole output.
func startProc(t *testing.T, name, bin string, args, env []string) *proc {
	t.Helper()
	return proctest.Start(t, name, bin, args, env, proctest.Options{LogDir: os.Getenv("VFX_DRILL_LOGS")})
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
		//lint:ignore SA1019 a test binary runs on the machine that built it, so its GOROOT is meaningful here
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
		if !n.p.Running() {
			t.Fatalf("nats-server exited: %s", proctest.Tail(n.p.Out.String(), 3000))
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
	n.p.Signal(t, syscall.SIGTERM)
	n.p.Wait(t, 30*time.Second)
	time.Sleep(down)
	n.start(t)
}
