package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientRetryLoops drives Client's three retry loops (call, the
// upload PUT, the output download) against a scripted loopback server,
// with a recording sleep: which failures are resent, after which pauses,
// and how many attempts at most.
func TestClientRetryLoops(t *testing.T) {
	var script []int // status of each next answer; 200 once it runs out
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(hits.Add(1)) - 1
		status := 200
		if n < len(script) {
			status = script[n]
		}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "3")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != 200 {
			_, _ = io.WriteString(w, `{"error":{"code":"X","message":"scripted"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	c := New(srv.URL, "k", "")
	var slept []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(name string, s []int, f func() error, wantHits int, wantSlept []time.Duration, wantStatus int) {
		t.Helper()
		script, slept = s, nil
		hits.Store(0)
		err := f()
		var ae *Error
		switch {
		case wantStatus == 0 && err != nil:
			t.Errorf("%s: %v", name, err)
		case wantStatus != 0 && (!errors.As(err, &ae) || ae.Status != wantStatus):
			t.Errorf("%s: error %v, want HTTP %d", name, err, wantStatus)
		}
		if int(hits.Load()) != wantHits || !slices.Equal(slept, wantSlept) {
			t.Errorf("%s: %d requests, pauses %v; want %d, %v", name, hits.Load(), slept, wantHits, wantSlept)
		}
	}
	s := time.Second
	call := func(retry bool) func() error {
		return func() error {
			_, _, _, err := c.Call(ctx, http.MethodGet, "/x", nil, CallOptions{Retry: retry})
			return err
		}
	}
	// A 429 waits its Retry-After (3 s), a 5xx the growing backoff.
	run("call", []int{429, 503, 500}, call(true), 4, []time.Duration{3 * s, s, 2 * s}, 0)
	// At most MaxCallAttempts, then the last error.
	run("call, always 503", []int{503, 503, 503, 503, 503, 503}, call(true), MaxCallAttempts,
		[]time.Duration{s / 2, s, 2 * s, 4 * s}, 503)
	// Without retry a 5xx is final; a 429 is still waited out; a 4xx is final.
	run("call, no retry", []int{503}, call(false), 1, nil, 503)
	run("call, no retry, 429", []int{429}, call(false), 2, []time.Duration{3 * s}, 0)
	run("call, 404", []int{404}, call(true), 1, nil, 404)

	file := filepath.Join(t.TempDir(), "a.png")
	if err := os.WriteFile(file, []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	put := func() error {
		return c.transient(ctx, func(ctx context.Context) (bool, error) {
			return c.putFile(ctx, srv.URL+"/put", file, 3, "image/png")
		})
	}
	run("upload", []int{502, 503}, put, 3, []time.Duration{s, 2 * s}, 0)
	run("upload, always 5xx", []int{500, 500, 500, 500, 500, 500}, put, MaxTransient, []time.Duration{s, 2 * s, 4 * s, 4 * s}, 500)
	run("upload, 403", []int{403}, put, 1, nil, 403)
	dst := filepath.Join(t.TempDir(), "render.mp4")
	get := func() error {
		return c.transient(ctx, func(ctx context.Context) (bool, error) { return c.download(ctx, srv.URL+"/f", dst) })
	}
	run("download", []int{503}, get, 2, []time.Duration{s}, 0)
	if b, err := os.ReadFile(dst); err != nil || string(b) != `{"ok":true}` {
		t.Errorf("downloaded %q, %v", b, err)
	}
	run("download, 404", []int{404}, get, 1, nil, 404)
}
