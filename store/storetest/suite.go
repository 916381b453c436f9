package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/store"
)

// Run is the conformance suite of store.Store: what every backend must do
// alike, so that the local backend (development) cannot drift from S3
// (production). newStore is called once per subtest; it may return the
// same store each time, since every subtest writes under its own fresh
// key prefix. The presigned URLs must be reachable by http.DefaultClient
// (for Local: its Handler served at its base URL).
//
// It checks: the not-found and invalid-key sentinels of every call; the
// default content type (application/octet-stream, never guessed from the
// key); that a put shows all of the new object or none of it (a reader
// failing half-way, a short body or a cancelled context leave no object,
// or the old one intact); unknown-size streaming (empty, small, and past
// a 16 MiB part); replacing; and the presigned URLs' lifetime bounds, a
// presigned GET and PUT, and an expired URL refused.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	base := "conformance/" + hex.EncodeToString(b[:]) + "/"
	sub := func(name string, f func(t *testing.T, s store.Store, prefix string)) {
		t.Run(name, func(t *testing.T) {
			f(t, newStore(t), base+strings.ReplaceAll(name, " ", "-")+"/")
		})
	}
	sub("not found", testNotFound)
	sub("default content type", testContentType)
	sub("put is all or nothing", testAtomicPut)
	sub("unknown size", testUnknownSize)
	sub("replace", testReplace)
	sub("presigned", testPresigned)
}

// put stores data under key and fails the test on an error.
func put(t *testing.T, s store.Store, key string, data []byte, size int64, ct string) store.Object {
	t.Helper()
	obj, err := s.Put(t.Context(), key, bytes.NewReader(data), size, ct)
	if err != nil {
		t.Fatalf("Put %s: %v", key, err)
	}
	return obj
}

// content opens key and returns its bytes and description, checking that
// Open and Stat describe it alike.
func content(t *testing.T, s store.Store, key string) ([]byte, store.Object) {
	t.Helper()
	rc, obj, err := s.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open %s: %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	st, err := s.Stat(t.Context(), key)
	if err != nil {
		t.Fatalf("Stat %s: %v", key, err)
	}
	if !sameObject(st, obj) || obj.Size != int64(len(data)) || obj.Key != key {
		t.Fatalf("%s: Open says %+v, Stat %+v, %d bytes read", key, obj, st, len(data))
	}
	return data, obj
}

// sameObject compares what both backends report alike (ModTime may be
// this side's clock after a Put on S3).
func sameObject(a, b store.Object) bool {
	return a.Key == b.Key && a.Size == b.Size && a.ContentType == b.ContentType && a.ETag == b.ETag && a.ETag != ""
}

func wantNotFound(t *testing.T, s store.Store, key string) {
	t.Helper()
	if _, err := s.Stat(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat %s = %v, want ErrNotFound", key, err)
	}
	if rc, _, err := s.Open(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
		if err == nil {
			rc.Close()
		}
		t.Fatalf("Open %s = %v, want ErrNotFound", key, err)
	}
}

func testNotFound(t *testing.T, s store.Store, p string) {
	ctx := t.Context()
	wantNotFound(t, s, p+"missing.png")
	if err := s.Delete(ctx, p+"missing.png"); err != nil {
		t.Fatalf("Delete of a missing key = %v, want nil", err)
	}
	put(t, s, p+"dir/obj.png", []byte("x"), 1, "image/png")
	// Neither a key's prefix nor a key below an object is an object.
	wantNotFound(t, s, p+"dir")
	wantNotFound(t, s, p+"dir/obj.png/below")
	if err := s.Delete(ctx, p+"dir/obj.png"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantNotFound(t, s, p+"dir/obj.png")
	if err := s.Delete(ctx, p+"dir/obj.png"); err != nil {
		t.Fatalf("second Delete = %v, want nil", err)
	}

	for _, bad := range []string{"", "/lead", p + "a//b", p + "../x", p + "tab\there", strings.Repeat("k", store.MaxKeyLen+1)} {
		errs := map[string]error{}
		_, errs["Put"] = s.Put(ctx, bad, strings.NewReader("x"), 1, "")
		_, _, errs["Open"] = s.Open(ctx, bad)
		_, errs["Stat"] = s.Stat(ctx, bad)
		errs["Delete"] = s.Delete(ctx, bad)
		_, errs["PresignGet"] = s.PresignGet(ctx, bad, time.Minute)
		_, errs["PresignPut"] = s.PresignPut(ctx, bad, time.Minute)
		for op, err := range errs {
			if !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("%s(%q) = %v, want ErrInvalidKey", op, bad, err)
			}
		}
	}

	u, err := s.PresignGet(ctx, p+"missing.png", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := httpDo(t, http.MethodGet, u, nil, ""); code != http.StatusNotFound {
		t.Fatalf("presigned GET of a missing key = %d, want 404", code)
	}
}

func testContentType(t *testing.T, s store.Store, p string) {
	const def = "application/octet-stream"
	for _, c := range []struct{ key, ct, want string }{
		{"none.png", "", def}, // never guessed from the key
		{"blank.mp4", "  ", def},
		{"given.bin", "image/png", "image/png"},
		{"padded.png", " video/mp4 ", "video/mp4"},
	} {
		obj := put(t, s, p+c.key, []byte("data"), 4, c.ct)
		_, got := content(t, s, p+c.key)
		if obj.ContentType != c.want || !sameObject(obj, got) {
			t.Errorf("Put %s with type %q = %+v, then %+v; want type %q", c.key, c.ct, obj, got, c.want)
		}
	}
	if _, err := s.Put(t.Context(), p+"ctl.png", strings.NewReader("x"), 1, "image/png\r\nX-Evil: 1"); err == nil {
		t.Error("Put with a control character in the content type succeeded")
	}
	// A presigned PUT without Content-Type gets the default too.
	u, err := s.PresignPut(t.Context(), p+"upload.png", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := httpDo(t, http.MethodPut, u, []byte("data"), ""); code != http.StatusOK {
		t.Fatalf("presigned PUT = %d %s", code, body)
	}
	if _, obj := content(t, s, p+"upload.png"); obj.ContentType != def {
		t.Errorf("presigned PUT without Content-Type stored %q, want %q", obj.ContentType, def)
	}
}

// failingReader yields n bytes then errFail.
type failingReader struct{ n int }

var errFail = errors.New("storetest: reader failed")

func (f *failingReader) Read(b []byte) (int, error) {
	if f.n <= 0 {
		return 0, errFail
	}
	k := min(len(b), f.n)
	clear(b[:k])
	f.n -= k
	return k, nil
}

func testAtomicPut(t *testing.T, s store.Store, p string) {
	ctx := t.Context()
	old := []byte("the original object")
	put(t, s, p+"old.png", old, int64(len(old)), "image/png")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		r    func() io.Reader
		size int64
	}{
		{"reader fails, known size", ctx, func() io.Reader { return &failingReader{n: 1000} }, 4000},
		{"reader fails, unknown size", ctx, func() io.Reader { return &failingReader{n: 1000} }, -1},
		{"reader fails after a 16 MiB part", ctx, func() io.Reader { return &failingReader{n: 20 << 20} }, -1},
		{"short body", ctx, func() io.Reader { return strings.NewReader("short") }, 100},
		{"cancelled context", cancelled, func() io.Reader { return strings.NewReader("new") }, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := s.Put(c.ctx, p+"new.png", c.r(), c.size, "text/plain"); err == nil {
				t.Fatal("Put succeeded")
			}
			wantNotFound(t, s, p+"new.png")
			// The same failure over an existing object leaves it as it was.
			if _, err := s.Put(c.ctx, p+"old.png", c.r(), c.size, "text/plain"); err == nil {
				t.Fatal("Put over an object succeeded")
			}
			if got, obj := content(t, s, p+"old.png"); !bytes.Equal(got, old) || obj.ContentType != "image/png" {
				t.Fatalf("after a failed Put the object is %q %+v, want the original", got, obj)
			}
		})
	}
}

// pattern is n deterministic bytes.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>11)
	}
	return b
}

func testUnknownSize(t *testing.T, s store.Store, p string) {
	for _, n := range []int{0, 1, 1 << 20, 17<<20 + 3} {
		data := pattern(n)
		key := p + "stream-" + strconv.Itoa(n) + ".bin"
		// Small reads, as from a network body.
		obj, err := s.Put(t.Context(), key, io.MultiReader(bytes.NewReader(data[:n/2]), bytes.NewReader(data[n/2:])), -1, "video/mp4")
		if err != nil {
			t.Fatalf("Put %d bytes of unknown size: %v", n, err)
		}
		got, st := content(t, s, key)
		if obj.Size != int64(n) || !sameObject(obj, st) || sha256.Sum256(got) != sha256.Sum256(data) {
			t.Fatalf("%d bytes of unknown size: Put %+v, Stat %+v, %d bytes back", n, obj, st, len(got))
		}
	}
	// An empty object of known size too.
	obj := put(t, s, p+"empty.bin", nil, 0, "")
	if got, st := content(t, s, p+"empty.bin"); len(got) != 0 || !sameObject(obj, st) {
		t.Fatalf("empty object: Put %+v, Stat %+v", obj, st)
	}
}

func testReplace(t *testing.T, s store.Store, p string) {
	a := put(t, s, p+"obj", []byte("first version"), 13, "image/png")
	b := put(t, s, p+"obj", []byte("second"), 6, "")
	got, st := content(t, s, p+"obj")
	if string(got) != "second" || !sameObject(b, st) || st.ContentType != "application/octet-stream" || a.ETag == b.ETag {
		t.Fatalf("after replacing: %q %+v (first %+v)", got, st, a)
	}
}

func testPresigned(t *testing.T, s store.Store, p string) {
	ctx := t.Context()
	key := p + "up load/clip ü.png"
	for _, ttl := range []time.Duration{0, -time.Second, store.MinPresignTTL - time.Millisecond, store.MaxPresignTTL + time.Second} {
		if _, err := s.PresignGet(ctx, key, ttl); !errors.Is(err, store.ErrInvalidTTL) {
			t.Errorf("PresignGet ttl %s = %v, want ErrInvalidTTL", ttl, err)
		}
		if _, err := s.PresignPut(ctx, key, ttl); !errors.Is(err, store.ErrInvalidTTL) {
			t.Errorf("PresignPut ttl %s = %v, want ErrInvalidTTL", ttl, err)
		}
	}
	for _, ttl := range []time.Duration{store.MinPresignTTL, time.Hour, store.MaxPresignTTL} {
		if _, err := s.PresignGet(ctx, key, ttl); err != nil {
			t.Errorf("PresignGet ttl %s: %v", ttl, err)
		}
	}
	u, err := s.PresignPut(ctx, key, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("uploaded through a presigned URL")
	if code, msg := httpDo(t, http.MethodPut, u, body, "image/png"); code != http.StatusOK {
		t.Fatalf("presigned PUT = %d %s", code, msg)
	}
	if got, obj := content(t, s, key); !bytes.Equal(got, body) || obj.ContentType != "image/png" {
		t.Fatalf("after presigned PUT: %q %+v", got, obj)
	}
	get, err := s.PresignGet(ctx, key, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if code, got := httpDo(t, http.MethodGet, get, nil, ""); code != http.StatusOK || !bytes.Equal(got, body) {
		t.Fatalf("presigned GET = %d %q", code, got)
	}
	// The shortest lifetime ends: the URL is refused (403) within a few
	// seconds of the clock's second.
	short, err := s.PresignGet(ctx, key, store.MinPresignTTL)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if code, _ := httpDo(t, http.MethodGet, short, nil, ""); code != http.StatusForbidden {
		t.Fatalf("expired presigned GET = %d, want 403", code)
	}
}

// httpDo sends one request and returns the status and the body.
func httpDo(t *testing.T, method, url string, body []byte, contentType string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, url, err)
	}
	return resp.StatusCode, b
}
