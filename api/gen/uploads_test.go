package gen

import (
	"bytes"
	"context"
	"errors"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vfxrender/vfx/store"
)

// newUpload asks for an upload URL and returns the answer.
func (e *env) newUpload(key, name string) Resp {
	return e.Do("POST", "/v1/uploads", key, map[string]any{"filename": name})
}

func put(t *testing.T, url string, b []byte) int {
	t.Helper()
	req, _ := http.NewRequest("PUT", url, bytes.NewReader(b))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestUploadQuotas: open uploads and bytes a day, each at its edge.
func TestUploadQuotas(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	img := apitest.PNGBytes(t, 64, 48, false)
	e := newEnv(t, envOpts{NoRun: true, Mut: func(c *api.Config) {
		c.MaxOpenUploads = 3
		c.MaxUploadBytesPerDay = int64(3 * len(img))
		c.Now = clock
	}})
	key := e.OrgKey()
	var urls, uris []string
	for i := range 3 {
		r := e.newUpload(key, "a.png")
		if r.Status != 200 {
			t.Fatalf("upload %d: %d %s", i, r.Status, r.Body)
		}
		urls, uris = append(urls, r.JSON(t)["upload_url"].(string)), append(uris, r.JSON(t)["vfx_uri"].(string))
	}
	r := e.newUpload(key, "a.png")
	if r.Status != 429 || r.Code() != api.CodeRateLimitExceeded || r.Header.Get("Retry-After") == "" {
		t.Fatalf("4th open upload: %d %v %s", r.Status, r.Header, r.Body)
	}
	// Another owner is not affected.
	if r := e.newUpload(e.OrgKey(), "a.png"); r.Status != 200 {
		t.Fatalf("other owner: %d %s", r.Status, r.Body)
	}
	// A job that uses one closes it. An upload URL takes one successful PUT.
	if put(t, urls[0], img) != 200 {
		t.Fatal("put")
	}
	if c := put(t, urls[0], apitest.PNGBytes(t, 8, 8, true)); c != http.StatusConflict {
		t.Fatalf("second PUT: %d, want 409", c)
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(uris[0])); r.Status != 201 {
		t.Fatalf("job: %d %s", r.Status, r.Body)
	}
	r = e.newUpload(key, "b.png")
	if r.Status != 200 {
		t.Fatalf("after a job used one: %d %s", r.Status, r.Body)
	}
	// Bytes a day: two of three uploads' worth is under the limit ...
	if put(t, urls[1], img) != 200 {
		t.Fatal("put")
	}
	advance(api.UploadURLTTL + time.Second) // every URL expired: none open
	r = e.newUpload(key, "c.png")
	if r.Status != 200 {
		t.Fatalf("2 of 3 uploads' bytes: %d %s", r.Status, r.Body)
	}
	// ... three is not.
	if put(t, r.JSON(t)["upload_url"].(string), img) != 200 {
		t.Fatal("put")
	}
	r = e.newUpload(key, "d.png")
	if r.Status != 429 || r.Code() != api.CodeRateLimitExceeded || r.Header.Get("Retry-After") == "" {
		t.Fatalf("over the bytes a day: %d %s", r.Status, r.Body)
	}
	advance(api.UploadQuotaWindow)
	if r := e.newUpload(key, "e.png"); r.Status != 200 {
		t.Fatalf("a day later: %d %s", r.Status, r.Body)
	}
}

// TestUploadExpiry: an upload no job used is deleted UploadExpiry after
// its creation, not before; a used one stays.
func TestUploadExpiry(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t, envOpts{NoRun: true, Mut: func(c *api.Config) { c.Now = clock; c.UploadExpiry = 24 * time.Hour }})
	key := e.OrgKey()
	img := apitest.PNGBytes(t, 64, 48, false)
	unused := e.Upload(key, "a.png", img)
	used := e.Upload(key, "b.png", img)
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(used)); r.Status != 201 {
		t.Fatalf("job: %d %s", r.Status, r.Body)
	}
	keyOf := func(uri string) string { return strings.TrimPrefix(uri, "vfx://") }
	ctx := context.Background()
	mu.Lock()
	now = now.Add(24*time.Hour - time.Second)
	mu.Unlock()
	if n, err := e.Srv.SweepUploads(ctx); err != nil || n != 0 {
		t.Fatalf("sweep before expiry: %d %v", n, err)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	if n, err := e.Srv.SweepUploads(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after expiry: %d %v", n, err)
	}
	if _, err := e.St.Stat(ctx, keyOf(unused)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unused upload still stored: %v", err)
	}
	if _, err := e.St.Stat(ctx, keyOf(used)); err != nil {
		t.Fatalf("used upload deleted: %v", err)
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(unused)); r.Status != 400 || r.Code() != api.CodeSourceUnreachable {
		t.Fatalf("expired upload: %d %s", r.Status, r.Body)
	}
}
