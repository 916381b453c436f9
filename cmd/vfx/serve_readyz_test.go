package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"
)

// TestServeReadyz: vfx serve answers /healthz and /readyz with 200 once it
// prints its listening line (the container image test and Kubernetes-style
// readiness probes use /readyz).
func TestServeReadyz(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--concurrency", "1"}, &out, &errOut)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("vfx serve did not stop within 30 s")
		}
	}()
	urlRe := regexp.MustCompile(`listening on (http://\S+)`)
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
	client := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Errorf("GET %s: %d %q, want 200 \"ok\\n\"", path, res.StatusCode, body)
		}
	}
}
