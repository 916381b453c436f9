package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// servedVFX is a `vfx serve` started in this process for a test.
type servedVFX struct {
	url, key, account, adminToken string
	out, log                      *syncBuffer
}

// startServeForDoc runs `vfx serve` on a free loopback port with an operator
// token and webhooks allowed to loopback, and stops it when the test ends.
func startServeForDoc(t *testing.T) *servedVFX {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &servedVFX{adminToken: "walkthrough-admin-token-0123456789", out: &syncBuffer{}, log: &syncBuffer{}}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--admin-token", s.adminToken,
			"--allow-private-networks", "--allow-http-callbacks", "--webhook-retry-delays", "200ms,1s,2s,3s"}, s.out, s.log)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	re := regexp.MustCompile(`(?m)^development account (\S+) .*\n(?:.*\n)*vfx serve listening on (\S+)\napi key \(shown once\): (\S+)\n`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(s.out.String()); m != nil {
			s.account, s.url, s.key = m[1], m[2], m[3]
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready: %s\n%s", s.out.String(), s.log.String())
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, s.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// buildVFX builds the vfx binary into a temporary folder and returns that
// folder (for PATH).
func buildVFX(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "vfx"), ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// docBlocks returns the shell script made of the doc's ```sh blocks, in
// order, and the files of its ```python blocks that start with
// "# file: NAME".
func docBlocks(t *testing.T, doc string) (string, map[string]string) {
	t.Helper()
	f, err := os.Open(doc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var script strings.Builder
	files := map[string]string{}
	var lang string
	var block []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case lang == "" && strings.HasPrefix(line, "```"):
			lang, block = strings.TrimPrefix(line, "```"), nil
			if lang == "" {
				t.Fatalf("%s: a code block without a language", doc)
			}
		case lang != "" && line == "```":
			switch lang {
			case "sh":
				script.WriteString(strings.Join(block, "\n") + "\n")
			case "python":
				if name, ok := strings.CutPrefix(block[0], "# file: "); ok {
					files[name] = strings.Join(block[1:], "\n") + "\n"
				}
			}
			lang = ""
		case lang != "":
			block = append(block, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return script.String(), files
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestAPIWalkthrough runs every sh block of docs/api-walkthrough.md, in
// order, in one bash against a real `vfx serve`, with the environment the
// doc tells a reader to set, and checks what the steps leave behind.
func TestAPIWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the walkthrough (several real jobs)")
	}
	for _, tool := range []string{"bash", "curl", "jq", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s (make deps installs it): %v", tool, err)
		}
	}
	bin := buildVFX(t)
	s := startServeForDoc(t)
	script, files := docBlocks(t, filepath.Join("..", "..", "docs", "api-walkthrough.md"))
	if !strings.Contains(script, "/v1/uploads") || files["webhook_receiver.py"] == "" {
		t.Fatalf("the doc lost its steps:\n%s", script)
	}
	work := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"VFX_API_URL="+s.url, "VFX_API_KEY="+s.key, "VFX_ACCOUNT="+s.account, "VFX_ADMIN_TOKEN="+s.adminToken,
		fmt.Sprintf("WEBHOOK_PORT=%d", freePort(t)))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("walkthrough: %v after %s\n%s\nserver log tail: %s", err, time.Since(start).Round(time.Millisecond), out, tail(s.log.String(), 3000))
	}
	t.Logf("walkthrough ran in %s", time.Since(start).Round(time.Millisecond))
	text := string(out)
	for _, want := range []string{"completed 100%", "signature ok: ", "same job both times: dap_", "finished: dap_", "warm golden hour key light",
		"ID                            STATUS     TYPE   ALPHA  FRAMES  PROMPT"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "rate limited") || strings.Contains(text, "429") {
		t.Errorf("rate limited:\n%s", text)
	}
	for _, f := range []string{"render.png", "source.png", "alpha.png", "webhook.json", "finished.png", "foreground.png", "product-alpha.png"} {
		if st, err := os.Stat(filepath.Join(work, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	// The product's foreground output: its alpha, read back with ffmpeg, is
	// the job's alpha within one code value.
	got, want := alphaByFFmpeg(t, filepath.Join(work, "foreground.png")), decodeMatte(t, filepath.Join(work, "product-alpha.png"))
	if len(got) != len(want) || len(want) != 640*360 {
		t.Fatalf("foreground alpha %d bytes, job alpha %d", len(got), len(want))
	}
	for i := range got {
		if d := int(got[i]) - int(want[i]); d > 1 || d < -1 {
			t.Fatalf("foreground alpha byte %d is %d, the job's alpha %d", i, got[i], want[i])
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
