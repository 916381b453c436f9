package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vfxrender/vfx/store"
	"github.com/vfxrender/vfx/store/storetest"
)

var testSecret = []byte("0123456789abcdef-test-secret")

func newLocal(t *testing.T, baseURL string, opts ...store.LocalOption) (*store.Local, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := store.NewLocal(dir, baseURL, testSecret, opts...)
	if err != nil {
		t.Fatalf("NewLocal: %v", err)
	}
	return l, dir
}

func readAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return b
}

func TestLocalPutOpenStatDelete(t *testing.T) {
	ctx := t.Context()
	l, _ := newLocal(t, "")
	data := []byte("hello, compositing world")

	obj, err := l.Put(ctx, "jobs/j1/render.mp4", bytes.NewReader(data), int64(len(data)), "video/mp4")
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if obj.Key != "jobs/j1/render.mp4" || obj.Size != int64(len(data)) || obj.ContentType != "video/mp4" || obj.ETag == "" || obj.ModTime.IsZero() {
		t.Fatalf("Put object = %+v", obj)
	}

	st, err := l.Stat(ctx, "jobs/j1/render.mp4")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if st != obj {
		t.Fatalf("Stat = %+v, Put gave %+v", st, obj)
	}

	rc, o2, err := l.Open(ctx, "jobs/j1/render.mp4")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if o2.ContentType != "video/mp4" || o2.Size != int64(len(data)) {
		t.Fatalf("Open object = %+v", o2)
	}
	if _, err := rc.Seek(7, io.SeekStart); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	if got := readAll(t, rc); string(got) != string(data[7:]) {
		t.Fatalf("read after seek = %q", got)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// Overwrite with a different type keeps one object with the new data.
	if _, err := l.Put(ctx, "jobs/j1/render.mp4", strings.NewReader("v2"), 2, ""); err != nil {
		t.Fatalf("Put v2: %v", err)
	}
	st, err = l.Stat(ctx, "jobs/j1/render.mp4")
	if err != nil || st.Size != 2 || st.ContentType != "application/octet-stream" || st.ETag == obj.ETag {
		t.Fatalf("Stat v2 = %+v, %v", st, err)
	}

	if err := l.Delete(ctx, "jobs/j1/render.mp4"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := l.Stat(ctx, "jobs/j1/render.mp4"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat after delete: %v, want ErrNotFound", err)
	}
	if _, _, err := l.Open(ctx, "jobs/j1/render.mp4"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Open after delete: %v, want ErrNotFound", err)
	}
	if err := l.Delete(ctx, "jobs/j1/render.mp4"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	// A directory prefix is not an object, and a key under a file is missing.
	if _, err := l.Put(ctx, "a/b/c.png", strings.NewReader("x"), 1, "image/png"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stat(ctx, "a/b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat of a directory prefix: %v, want ErrNotFound", err)
	}
	if _, err := l.Stat(ctx, "a/b/c.png/d"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat below a file: %v, want ErrNotFound", err)
	}
}

func TestLocalUnknownSize(t *testing.T) {
	ctx := t.Context()
	l, _ := newLocal(t, "")
	data := bytes.Repeat([]byte("0123456789"), 100_000)
	obj, err := l.Put(ctx, "big.bin", io.MultiReader(bytes.NewReader(data[:5]), bytes.NewReader(data[5:])), -1, "application/x-test")
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if obj.Size != int64(len(data)) {
		t.Fatalf("size = %d, want %d", obj.Size, len(data))
	}
	rc, _, err := l.Open(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got := readAll(t, rc); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
}

// failingReader yields n bytes then an error.
type failingReader struct{ n int }

var errBoom = errors.New("boom")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errBoom
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

func TestLocalPutAtomic(t *testing.T) {
	ctx := t.Context()
	l, dir := newLocal(t, "")
	if _, err := l.Put(ctx, "k/obj.png", strings.NewReader("original"), 8, "image/png"); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		rc, obj, err := l.Open(ctx, "k/obj.png")
		if err != nil {
			t.Fatalf("%s: Open: %v", step, err)
		}
		defer rc.Close()
		if got := readAll(t, rc); string(got) != "original" || obj.ContentType != "image/png" {
			t.Fatalf("%s: object = %q %+v, want the original", step, got, obj)
		}
		tmp, err := os.ReadDir(filepath.Join(dir, "tmp"))
		if err != nil || len(tmp) != 0 {
			t.Fatalf("%s: temp files left: %v %v", step, tmp, err)
		}
	}

	if _, err := l.Put(ctx, "k/obj.png", &failingReader{n: 100_000}, -1, "text/plain"); !errors.Is(err, errBoom) {
		t.Fatalf("Put with failing reader: %v, want errBoom", err)
	}
	check("failing reader")

	if _, err := l.Put(ctx, "k/obj.png", strings.NewReader("short"), 100, "text/plain"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Put with short body: %v, want ErrUnexpectedEOF", err)
	}
	check("short body")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Put(cctx, "k/obj.png", strings.NewReader("new"), 3, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with cancelled ctx: %v", err)
	}
	check("cancelled")

	// A failing first write leaves no object at all.
	if _, err := l.Put(ctx, "k/new.png", &failingReader{n: 10}, -1, ""); err == nil {
		t.Fatal("Put with failing reader succeeded")
	}
	if _, err := l.Stat(ctx, "k/new.png"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat after failed put: %v, want ErrNotFound", err)
	}
}

func TestValidateKey(t *testing.T) {
	good := []string{"a", "uploads/upload_abc12345/my clip.mp4", "jobs/j_1/render.mp4", "a..b", strings.Repeat("k", 1024), "ünïcode/ファイル.png"}
	bad := []string{"", "/abs", "a//b", "a/", "../x", "a/../b", "a/./b", ".", "..", "a\x00b", "tab\there", "a\\b", strings.Repeat("k", 1025), "bad\xffutf8"}
	for _, k := range good {
		if err := store.ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	l, _ := newLocal(t, "")
	for _, k := range bad {
		if err := store.ValidateKey(k); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
		if _, err := l.Put(t.Context(), k, strings.NewReader("x"), 1, ""); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

// signedServer starts a loopback server for l's handler and returns l.
func signedServer(t *testing.T, opts ...store.LocalOption) (*store.Local, *httptest.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	l, _ := newLocal(t, "http://"+srv.Listener.Addr().String()+"/", opts...)
	mux := http.NewServeMux()
	mux.Handle(store.FilesPath, l.Handler())
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return l, srv
}

func do(t *testing.T, method, u string, body io.Reader, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	return resp, readAll(t, resp.Body)
}

func TestLocalSignedURLs(t *testing.T) {
	ctx := t.Context()
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Unix())
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	l, srv := signedServer(t, store.WithClock(clock), store.WithMaxUpload(1000))
	key := "uploads/upload_abcDEF123/my clip.png"
	payload := []byte("0123456789ABCDEFGHIJ")

	putURL, err := l.PresignPut(ctx, key, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(putURL, srv.URL+store.FilesPath) || !strings.Contains(putURL, "op=put") {
		t.Fatalf("put url = %s", putURL)
	}
	resp, _ := do(t, http.MethodPut, putURL, bytes.NewReader(payload), map[string]string{"Content-Type": "image/png"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == "" {
		t.Fatalf("PUT = %d etag %q", resp.StatusCode, resp.Header.Get("ETag"))
	}

	getURL, err := l.PresignGet(ctx, key, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("get", func(t *testing.T) {
		resp, body := do(t, http.MethodGet, getURL, nil, nil)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, payload) || resp.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("GET = %d %q type %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
		}
	})
	t.Run("range", func(t *testing.T) {
		resp, body := do(t, http.MethodGet, getURL, nil, map[string]string{"Range": "bytes=5-9"})
		if resp.StatusCode != http.StatusPartialContent || string(body) != "56789" || resp.Header.Get("Content-Range") != "bytes 5-9/20" {
			t.Fatalf("range GET = %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Range"))
		}
	})
	t.Run("head", func(t *testing.T) {
		resp, _ := do(t, http.MethodHead, getURL, nil, nil)
		if resp.StatusCode != http.StatusOK || resp.ContentLength != 20 {
			t.Fatalf("HEAD = %d len %d", resp.StatusCode, resp.ContentLength)
		}
	})
	t.Run("put without content type", func(t *testing.T) {
		u, _ := l.PresignPut(ctx, "x/plain.bin", time.Minute)
		resp, _ := do(t, http.MethodPut, u, strings.NewReader("abc"), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT = %d", resp.StatusCode)
		}
		obj, err := l.Stat(ctx, "x/plain.bin")
		if err != nil || obj.Size != 3 || obj.ContentType != "application/octet-stream" {
			t.Fatalf("Stat = %+v %v", obj, err)
		}
	})

	forbidden := func(t *testing.T, method, u string, body io.Reader) string {
		t.Helper()
		resp, msg := do(t, method, u, body, nil)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s = %d %q, want 403", method, resp.StatusCode, msg)
		}
		return envelope(t, resp, msg, "FORBIDDEN")
	}
	t.Run("tampered signature", func(t *testing.T) {
		u, _ := url.Parse(getURL)
		q := u.Query()
		sig := []byte(q.Get("sig"))
		sig[3] ^= 1
		q.Set("sig", string(sig))
		u.RawQuery = q.Encode()
		forbidden(t, http.MethodGet, u.String(), nil)
	})
	t.Run("tampered expiry", func(t *testing.T) {
		u, _ := url.Parse(getURL)
		q := u.Query()
		q.Set("exp", "99999999999")
		u.RawQuery = q.Encode()
		forbidden(t, http.MethodGet, u.String(), nil)
	})
	t.Run("other key", func(t *testing.T) {
		forbidden(t, http.MethodGet, strings.Replace(getURL, "my%20clip.png", "other.png", 1), nil)
	})
	t.Run("missing signature", func(t *testing.T) {
		forbidden(t, http.MethodGet, srv.URL+store.FilesPath+"x/plain.bin", nil)
	})
	t.Run("wrong op", func(t *testing.T) {
		forbidden(t, http.MethodPut, getURL, strings.NewReader("evil"))
		forbidden(t, http.MethodGet, putURL, nil)
		u := strings.Replace(getURL, "op=get", "op=put", 1)
		forbidden(t, http.MethodPut, u, strings.NewReader("evil"))
	})
	t.Run("expired", func(t *testing.T) {
		short, err := l.PresignGet(ctx, key, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := do(t, http.MethodGet, short, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("fresh 1s URL = %d", resp.StatusCode)
		}
		now.Add(2)
		defer now.Add(-2)
		if msg := forbidden(t, http.MethodGet, short, nil); !strings.Contains(msg, "expired") {
			t.Fatalf("message %q does not say expired", msg)
		}
	})
	t.Run("put over the cap", func(t *testing.T) {
		u, _ := l.PresignPut(ctx, "x/big.bin", time.Minute)
		resp, msg := do(t, http.MethodPut, u, bytes.NewReader(make([]byte, 1001)), nil)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("PUT with content-length over cap = %d, want 413", resp.StatusCode)
		}
		envelope(t, resp, msg, "REQUEST_TOO_LARGE")
		// Unknown length (chunked): the cap applies while streaming.
		resp, _ = do(t, http.MethodPut, u, io.MultiReader(bytes.NewReader(make([]byte, 600)), bytes.NewReader(make([]byte, 600))), nil)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked PUT over cap = %d, want 413", resp.StatusCode)
		}
		if _, err := l.Stat(ctx, "x/big.bin"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("object after refused PUT: %v", err)
		}
		// Exactly the cap is fine.
		resp, _ = do(t, http.MethodPut, u, bytes.NewReader(make([]byte, 1000)), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT at the cap = %d", resp.StatusCode)
		}
	})
	t.Run("missing object", func(t *testing.T) {
		u, _ := l.PresignGet(ctx, "nope/none.png", time.Minute)
		resp, msg := do(t, http.MethodGet, u, nil, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET missing = %d", resp.StatusCode)
		}
		envelope(t, resp, msg, "NOT_FOUND")
	})
	t.Run("method", func(t *testing.T) {
		resp, msg := do(t, http.MethodDelete, getURL, nil, nil)
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("DELETE = %d", resp.StatusCode)
		}
		envelope(t, resp, msg, "METHOD_NOT_ALLOWED")
	})
}

// envelope checks that an error answer of the signed-URL handler is the
// API's JSON envelope with code, and returns its message.
func envelope(t *testing.T, resp *http.Response, body []byte, code string) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%d: content type %q, want application/json: %s", resp.StatusCode, ct, body)
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != code || e.Error.Message == "" {
		t.Fatalf("%d: body %s, want the envelope with code %s (%v)", resp.StatusCode, body, code, err)
	}
	return e.Error.Message
}

func TestPresignTTL(t *testing.T) {
	l, _ := newLocal(t, "https://files.example")
	for _, ttl := range []time.Duration{0, 999 * time.Millisecond, -time.Second, 7*24*time.Hour + time.Second} {
		if _, err := l.PresignGet(t.Context(), "a.png", ttl); !errors.Is(err, store.ErrInvalidTTL) {
			t.Errorf("PresignGet ttl %s = %v, want ErrInvalidTTL", ttl, err)
		}
	}
	for _, ttl := range []time.Duration{time.Second, time.Hour, 7 * 24 * time.Hour} {
		u, err := l.PresignPut(t.Context(), "a.png", ttl)
		if err != nil || !strings.HasPrefix(u, "https://files.example/v1/files/a.png?") {
			t.Errorf("PresignPut ttl %s = %q, %v", ttl, u, err)
		}
	}
}

func TestNewLocalErrors(t *testing.T) {
	if _, err := store.NewLocal(t.TempDir(), "", []byte("short")); err == nil {
		t.Error("short secret accepted")
	}
	if _, err := store.NewLocal("", "", testSecret); err == nil {
		t.Error("empty dir accepted")
	}
	if _, err := store.NewLocal(t.TempDir(), "http://x/?q=1", testSecret); err == nil {
		t.Error("base url with query accepted")
	}
}

// TestLocalConformance runs the store contract suite on Local, its signed
// URLs served by Handler.
func TestLocalConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		mux := http.NewServeMux()
		ts := httptest.NewServer(mux)
		t.Cleanup(ts.Close)
		l, _ := newLocal(t, ts.URL)
		mux.Handle(store.FilesPath, l.Handler())
		return l
	})
}
