package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeFlags(t *testing.T) {
	cfg, err := parseServeFlags(nil, io.Discard, func(k string) string {
		if k == "VFX_ADMIN_TOKEN" {
			return "0123456789abcdef0123"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.listen != "127.0.0.1:8080" || cfg.adminToken != "0123456789abcdef0123" || len(cfg.webhookDelays) != 4 ||
		cfg.webhookDelays[3] != 2*time.Minute || cfg.concurrency != 1 || cfg.allowPrivateNetworks || cfg.allowHTTPCallbacks {
		t.Fatalf("%+v", cfg)
	}
	for _, args := range [][]string{{"--concurrency", "0"}, {"--webhook-retry-delays", "x"}, {"--admin-token", "short"}, {"extra"}} {
		if _, err := parseServeFlags(args, io.Discard, func(string) string { return "" }); err == nil {
			t.Fatalf("%v accepted", args)
		}
	}
}

// TestServe starts `vfx serve` on a free port, uses the development key
// it prints to upload an image and run a job to completion, and stops it
// with its context (as SIGTERM does).
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	data := t.TempDir()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data", data, "--admin-token", "0123456789abcdef",
			"--allow-private-networks", "--allow-http-callbacks", "--webhook-retry-delays", "50ms", "--concurrency", "2"}, &out, &errOut)
	}()
	urlRe := regexp.MustCompile(`listening on (http://\S+)`)
	keyRe := regexp.MustCompile(`api key \(shown once\): (\S+)`)
	deadline := time.Now().Add(serveStartTimeout)
	for !urlRe.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line: %s\n%s", out.String(), errOut.String())
		}
		select {
		case code := <-done:
			t.Fatalf("exited %d: %s", code, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	base := urlRe.FindStringSubmatch(out.String())[1]
	km := keyRe.FindStringSubmatch(out.String())
	if km == nil {
		t.Fatalf("no key printed: %s", out.String())
	}
	key := km[1]
	// The key and the URL are the last lines printed, and the embedded
	// NATS server's banner stays out of the info-level log.
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if n := len(lines); n < 2 || !strings.HasPrefix(lines[n-1], "api key (shown once): ") || !strings.HasPrefix(lines[n-2], "vfx serve listening on ") {
		t.Fatalf("key and URL are not the last lines:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "organisation key, no rate or concurrency limits") {
		t.Errorf("no word on the key's limits:\n%s", out.String())
	}
	if strings.Contains(errOut.String(), "Starting nats-server") || strings.Contains(errOut.String(), "Server is ready") {
		t.Errorf("NATS banner in the log:\n%s", errOut.String())
	}
	call := func(method, path string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("x-api-key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		raw, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(raw, &m); err != nil || res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
		}
		return m
	}
	up := call("POST", "/v1/uploads", map[string]any{"filename": "a.png"})
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), 90, 255})
		}
	}
	var pb bytes.Buffer
	_ = png.Encode(&pb, img)
	req, _ := http.NewRequest("PUT", up["upload_url"].(string), &pb)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("put: %v %v", err, res)
	}
	res.Body.Close()
	job := call("POST", "/v1/vfx/generations", map[string]any{"generation_type": "image", "source_uri": up["vfx_uri"],
		"alpha_mode": "fill", "prompt": "golden hour"})
	id := job["id"].(string)
	// The development key is organisation-kind: no read limit, so poll
	// as fast as we like (a personal key would get a 429 on the 6th read).
	reads := 0
	for i := 0; i < 300; i++ {
		time.Sleep(50 * time.Millisecond)
		job = call("GET", "/v1/vfx/generations/"+id, nil)
		reads++
		if job["status"] == "completed" || job["status"] == "failed" {
			break
		}
	}
	for reads < 8 {
		call("GET", "/v1/vfx/generations/"+id, nil)
		reads++
	}
	if job["status"] != "completed" {
		t.Fatalf("job %v", job)
	}
	res, err = http.Get(job["output"].(map[string]any)["render"].(string))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("render: %v %v", err, res)
	}
	res.Body.Close()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(errOut.String(), "stopped") {
		t.Fatalf("no clean stop logged: %s", errOut.String())
	}
}
