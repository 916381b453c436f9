package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vfxrender/vfx/dispatch"
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
	data := t.TempDir() // before serve starts: see startServe
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data", data, "--admin-token", s.adminToken,
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
	deadline := time.Now().Add(serveStartTimeout)
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
// order, and the files of its ```python and ```js blocks that start with
// "# file: NAME" or "// file: NAME".
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
			case "python", "js":
				first := strings.TrimPrefix(strings.TrimPrefix(block[0], "# "), "// ")
				if name, ok := strings.CutPrefix(first, "file: "); ok {
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
	proxy := newStatusProxy(t, s.url)
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
		"VFX_API_URL="+proxy.url, "VFX_API_KEY="+s.key, "VFX_ACCOUNT="+s.account, "VFX_ADMIN_TOKEN="+s.adminToken,
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
	// Every API answer the walkthrough got, by its status (never by digits
	// in free text: timestamps, ids and signatures hold any three digits).
	if n, limited := proxy.statuses(); n == 0 {
		t.Errorf("no API request went through the proxy:\n%s", text)
	} else if len(limited) > 0 {
		t.Errorf("%d of %d API requests answered 429: %v\n%s", len(limited), n, limited, text)
	}
	if strings.Contains(text, ": rate limited, next read in ") {
		t.Errorf("the vfx client was rate limited:\n%s", text)
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

// statusProxy is a reverse proxy in front of the API that records the
// status of every answer, so that a test checks statuses, not text.
type statusProxy struct {
	url string
	mu  sync.Mutex
	all int
	bad []string // "METHOD /path STATUS" of each 429
}

func newStatusProxy(t *testing.T, target string) *statusProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &statusProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) },
		ModifyResponse: func(res *http.Response) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.all++
			if res.StatusCode == http.StatusTooManyRequests {
				p.bad = append(p.bad, fmt.Sprintf("%s %s %d", res.Request.Method, res.Request.URL.Path, res.StatusCode))
			}
			return nil
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// statuses returns the number of answers and the 429 ones.
func (p *statusProxy) statuses() (int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.all, append([]string(nil), p.bad...)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestWalkthroughReceivers: both webhook receivers of the doc accept a
// request signed as the server signs it and refuse a bad signature.
func TestWalkthroughReceivers(t *testing.T) {
	_, files := docBlocks(t, filepath.Join("..", "..", "docs", "api-walkthrough.md"))
	dir := t.TempDir()
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for name, interp := range map[string]string{"webhook_receiver.py": "python3", "webhook_receiver.js": "node"} {
		if files[name] == "" {
			t.Fatalf("the doc lost %s", name)
		}
		if _, err := exec.LookPath(interp); err != nil {
			if interp == "python3" {
				t.Fatalf("%s: %v", interp, err)
			}
			t.Logf("no %s here: %s not run", interp, name)
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		port := freePort(t)
		cmd := exec.Command(interp, path, strconv.Itoa(port))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret)
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// A loaded machine (pyenv shims) may take many seconds to start python.
		deadline := time.Now().Add(90 * time.Second)
		for !strings.Contains(out.String(), "listening on") {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not start: %s", name, out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		body := []byte(`{"id":"vfx_abc","status":"completed","completed_at":"2026-03-01T12:00:00Z","output":{}}`)
		ts := time.Now().Unix()
		for _, c := range []struct {
			sig  string
			want int
		}{
			{dispatch.SignWebhook(secret, "msg_1", ts, body), http.StatusNoContent},
			{dispatch.SignWebhook("whsec_"+base64.StdEncoding.EncodeToString([]byte("another secret")), "msg_1", ts, body), http.StatusUnauthorized},
		} {
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/hook", port), bytes.NewReader(body))
			req.Header.Set("webhook-id", "msg_1")
			req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
			req.Header.Set("webhook-signature", c.sig)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			res.Body.Close()
			if res.StatusCode != c.want {
				t.Errorf("%s: signature %s: status %d, want %d (%s)", name, c.sig, res.StatusCode, c.want, out.String())
			}
		}
	}
}
