// Package storetest starts a real MinIO server for tests of any package
// that needs S3. It is imported only by tests.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Environment variables read by StartMinIO.
const (
	// EnvMinIOBin names the minio binary (make test sets it to
	// .tools/bin/minio).
	EnvMinIOBin = "VFX_MINIO_BIN"
	// EnvRequireMinIO=1 turns a missing binary into a test failure
	// instead of a skip (make test sets it).
	EnvRequireMinIO = "VFX_REQUIRE_MINIO"
)

// Credentials of the test server.
const (
	AccessKey = "vfxtestadmin"
	SecretKey = "vfxtestsecret-0123456789"
)

// startTimeout bounds the wait for /minio/health/live.
const startTimeout = 60 * time.Second

// server is one MinIO process that can be stopped and restarted on the
// same address and data directory.
type server struct {
	tb      testing.TB
	bin     string
	dataDir string
	addr    string
	console string

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// StartMinIO runs `minio server` on a fresh data directory bound to
// 127.0.0.1 on free ports, waits until /minio/health/live answers 200, and
// kills it when the test ends. It returns the endpoint (host:port, plain
// HTTP), the root credentials, stop (kills the server; idempotent) and
// restart (stops it if running, then starts it again on the same address
// and data directory and waits until it is live), for fault tests.
//
// The binary is $VFX_MINIO_BIN, else .tools/bin/minio in the module root,
// else minio on PATH. Without one the test is skipped, or fails when
// VFX_REQUIRE_MINIO=1.
func StartMinIO(tb testing.TB) (endpoint, accessKey, secretKey string, stop func(), restart func()) {
	tb.Helper()
	bin := findBinary()
	if bin == "" {
		if os.Getenv(EnvRequireMinIO) == "1" {
			tb.Fatalf("storetest: MinIO binary not found (%s=%q) and %s=1: run `make minio`", EnvMinIOBin, os.Getenv(EnvMinIOBin), EnvRequireMinIO)
		}
		tb.Skip("MinIO not installed: run `make minio` (make test does)")
	}
	s := &server{
		tb:      tb,
		bin:     bin,
		dataDir: tb.TempDir(),
		addr:    freeAddr(tb),
		console: freeAddr(tb),
	}
	tb.Cleanup(s.stop)
	if err := s.start(); err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	restart = func() {
		tb.Helper()
		s.stop()
		if err := s.start(); err != nil {
			tb.Fatalf("storetest: restart: %v", err)
		}
	}
	return s.addr, AccessKey, SecretKey, s.stop, restart
}

// findBinary locates the minio binary, or returns "".
func findBinary() string {
	if p := os.Getenv(EnvMinIOBin); p != "" {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
		return ""
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				p := filepath.Join(dir, ".tools", "bin", "minio")
				if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
					return p
				}
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p
	}
	return ""
}

// freeAddr returns 127.0.0.1:<port> of a port that was free a moment ago.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("storetest: free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		tb.Fatalf("storetest: free port: %v", err)
	}
	return addr
}

func (s *server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	cmd := exec.Command(s.bin, "server", s.dataDir, "--address", s.addr, "--console-address", s.console, "--quiet")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+AccessKey,
		"MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"MINIO_CI_CD=1",
	)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.out, s.done = cmd, out, done
	if err := waitLive(s.addr, done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		s.cmd = nil
		return fmt.Errorf("%w; minio output:\n%s", err, out.tail(4096))
	}
	return nil
}

// stop kills the server and waits for it to exit; it is idempotent.
func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// waitLive polls the liveness endpoint until 200, the process exits, or
// startTimeout passes.
func waitLive(addr string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + addr + "/minio/health/live"
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("minio exited before becoming live")
		case <-ctx.Done():
			return fmt.Errorf("minio not live at %s after %s", addr, startTimeout)
		case <-tick.C:
		}
	}
}

// lockedBuffer collects process output safely.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
