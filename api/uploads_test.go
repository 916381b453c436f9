package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vfxrender/vfx/store"
)

// TestUploadOwnership: an upload belongs to the account, or to the
// organisation and team, that created it; anyone else naming it gets the
// answer of an upload that does not exist, word for word.
func TestUploadOwnership(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	keyA, keyB := e.orgKey(), e.orgKey()
	img := pngBytes(t, 64, 48, false)
	srcA := e.upload(keyA, "still.png", img)
	missing := strings.Replace(srcA, "upload_", "upload_X", 1)

	// Generation API: B gets what a missing upload gets; A gets its job.
	rOther := e.do("POST", "/v1/vfx/generations", keyB, validReq(srcA))
	rMissing := e.do("POST", "/v1/vfx/generations", keyB, validReq(missing))
	if rOther.status != 400 || rOther.code() != CodeSourceUnreachable {
		t.Fatalf("someone else's upload: %d %s", rOther.status, rOther.body)
	}
	if rMissing.status != rOther.status || strings.ReplaceAll(string(rMissing.body), missing, srcA) != string(rOther.body) {
		t.Fatalf("answers differ:\n%s\n%s", rOther.body, rMissing.body)
	}
	if r := e.do("POST", "/v1/vfx/generations", keyA, validReq(srcA)); r.status != 201 {
		t.Fatalf("owner: %d %s", r.status, r.body)
	}

	// Product API: the team context must match too.
	o := e.newOrg(1000, nil)
	teamSrc := e.upload(o.TeamKey, "still.png", img)
	orgSrc := e.upload(o.Key, "still.png", img)
	wantDetail(t, e.do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("a", teamSrc)), 400, CodeSourceUnreachable)
	wantDetail(t, e.do("POST", "/v1/products/vfx/jobs", o.TeamKey, vfxJob("b", orgSrc)), 400, CodeSourceUnreachable)
	wantDetail(t, e.do("POST", "/v1/products/vfx/jobs", o.TeamKey, vfxJob("c", srcA)), 400, CodeSourceUnreachable)
	if r := e.do("POST", "/v1/products/vfx/jobs", o.TeamKey, vfxJob("d", teamSrc)); r.status != 202 {
		t.Fatalf("team upload, team key: %d %s", r.status, r.body)
	}
	// The organisation-wide key acting for the team (header) is the team.
	if r := e.do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("e", teamSrc), HeaderTeamID, o.TeamID); r.status != 202 {
		t.Fatalf("team upload, org key with team header: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("f", orgSrc)); r.status != 202 {
		t.Fatalf("org upload, org key: %d %s", r.status, r.body)
	}
	// And a generation account cannot use an organisation's upload.
	if r := e.do("POST", "/v1/vfx/generations", keyA, validReq(orgSrc)); r.status != 400 || r.code() != CodeSourceUnreachable {
		t.Fatalf("org upload from an account: %d %s", r.status, r.body)
	}
}

// newUpload asks for an upload URL and returns the answer.
func (e *env) newUpload(key, name string) resp {
	return e.do("POST", "/v1/uploads", key, map[string]any{"filename": name})
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
	img := pngBytes(t, 64, 48, false)
	e := newEnv(t, envOpts{noRun: true, mut: func(c *Config) {
		c.MaxOpenUploads = 3
		c.MaxUploadBytesPerDay = int64(3 * len(img))
		c.Now = clock
	}})
	key := e.orgKey()
	var urls, uris []string
	for i := range 3 {
		r := e.newUpload(key, "a.png")
		if r.status != 200 {
			t.Fatalf("upload %d: %d %s", i, r.status, r.body)
		}
		urls, uris = append(urls, r.json(t)["upload_url"].(string)), append(uris, r.json(t)["vfx_uri"].(string))
	}
	r := e.newUpload(key, "a.png")
	if r.status != 429 || r.code() != CodeRateLimitExceeded || r.header.Get("Retry-After") == "" {
		t.Fatalf("4th open upload: %d %v %s", r.status, r.header, r.body)
	}
	// Another owner is not affected.
	if r := e.newUpload(e.orgKey(), "a.png"); r.status != 200 {
		t.Fatalf("other owner: %d %s", r.status, r.body)
	}
	// A job that uses one closes it. An upload URL takes one successful PUT.
	if put(t, urls[0], img) != 200 {
		t.Fatal("put")
	}
	if c := put(t, urls[0], pngBytes(t, 8, 8, true)); c != http.StatusConflict {
		t.Fatalf("second PUT: %d, want 409", c)
	}
	if r := e.do("POST", "/v1/vfx/generations", key, validReq(uris[0])); r.status != 201 {
		t.Fatalf("job: %d %s", r.status, r.body)
	}
	r = e.newUpload(key, "b.png")
	if r.status != 200 {
		t.Fatalf("after a job used one: %d %s", r.status, r.body)
	}
	// Bytes a day: two of three uploads' worth is under the limit ...
	if put(t, urls[1], img) != 200 {
		t.Fatal("put")
	}
	advance(UploadURLTTL + time.Second) // every URL expired: none open
	r = e.newUpload(key, "c.png")
	if r.status != 200 {
		t.Fatalf("2 of 3 uploads' bytes: %d %s", r.status, r.body)
	}
	// ... three is not.
	if put(t, r.json(t)["upload_url"].(string), img) != 200 {
		t.Fatal("put")
	}
	r = e.newUpload(key, "d.png")
	if r.status != 429 || r.code() != CodeRateLimitExceeded || r.header.Get("Retry-After") == "" {
		t.Fatalf("over the bytes a day: %d %s", r.status, r.body)
	}
	advance(uploadQuotaWindow)
	if r := e.newUpload(key, "e.png"); r.status != 200 {
		t.Fatalf("a day later: %d %s", r.status, r.body)
	}
}

// TestUploadExpiry: an upload no job used is deleted UploadExpiry after
// its creation, not before; a used one stays.
func TestUploadExpiry(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t, envOpts{noRun: true, mut: func(c *Config) { c.Now = clock; c.UploadExpiry = 24 * time.Hour }})
	key := e.orgKey()
	img := pngBytes(t, 64, 48, false)
	unused := e.upload(key, "a.png", img)
	used := e.upload(key, "b.png", img)
	if r := e.do("POST", "/v1/vfx/generations", key, validReq(used)); r.status != 201 {
		t.Fatalf("job: %d %s", r.status, r.body)
	}
	keyOf := func(uri string) string { return strings.TrimPrefix(uri, "vfx://") }
	ctx := context.Background()
	mu.Lock()
	now = now.Add(24*time.Hour - time.Second)
	mu.Unlock()
	if n, err := e.srv.SweepUploads(ctx); err != nil || n != 0 {
		t.Fatalf("sweep before expiry: %d %v", n, err)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	if n, err := e.srv.SweepUploads(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after expiry: %d %v", n, err)
	}
	if _, err := e.st.Stat(ctx, keyOf(unused)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unused upload still stored: %v", err)
	}
	if _, err := e.st.Stat(ctx, keyOf(used)); err != nil {
		t.Fatalf("used upload deleted: %v", err)
	}
	if r := e.do("POST", "/v1/vfx/generations", key, validReq(unused)); r.status != 400 || r.code() != CodeSourceUnreachable {
		t.Fatalf("expired upload: %d %s", r.status, r.body)
	}
}
