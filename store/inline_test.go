package store_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vfxrender/vfx/store"
)

// TestPutData: a data: URI is streamed into the store and opened back
// through its job input reference; content that is not the declared type
// or bad base64 stores nothing.
func TestPutData(t *testing.T) {
	ctx := t.Context()
	l, _ := newLocal(t, "")
	r := &store.Resolver{Store: l}
	content := pngBytes(t)
	u, err := r.Parse(dataURI("image/png", content))
	if err != nil {
		t.Fatal(err)
	}
	if u.DataSize() != int64(len(content)) {
		t.Fatalf("DataSize %d, want %d", u.DataSize(), len(content))
	}
	key := store.JobInputKey("jobs", "vfx_abc", "source"+store.DataExt(u.MIME))
	if _, err := store.PutData(ctx, l, key, u); err != nil {
		t.Fatal(err)
	}
	uri := store.JobInputURI("jobs", "vfx_abc", "source.png")
	rc, info, err := r.Open(ctx, uri)
	if err != nil {
		t.Fatalf("open %s: %v", uri, err)
	}
	defer rc.Close()
	if got := readAll(t, rc); !bytes.Equal(got, content) || info.URI.Kind != store.KindJobInput || info.URI.Key() != key {
		t.Fatalf("content or info differs: %+v", info)
	}

	jpeg := append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, make([]byte, 100)...)
	u, _ = r.Parse(dataURI("image/png", jpeg))
	if _, err := store.PutData(ctx, l, "jobs/vfx_b/inputs/source.png", u); !errors.Is(err, store.ErrMIMEMismatch) {
		t.Fatalf("jpeg as png: %v", err)
	}
	if _, err := l.Stat(ctx, "jobs/vfx_b/inputs/source.png"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused content was stored: %v", err)
	}
	for _, bad := range []string{"vfx://jobs/vfx_abc/source.png", "vfx://jobs/a/b/inputs/x.png", "vfx://product-jobs/x-y/inputs/s.png", "vfx://jobs/vfx_abc/inputs/s.exe"} {
		if _, err := store.ParseURI(bad); !errors.Is(err, store.ErrInvalidURI) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestCheckSniff is the one sniffing rule of uploads and data: URIs.
func TestCheckSniff(t *testing.T) {
	png := pngBytes(t)
	jpeg := []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 0}
	mov := []byte("\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00qt  ")
	mp4 := []byte("\x00\x00\x00\x14ftypisom\x00\x00\x00\x00isom")
	for _, tc := range []struct {
		declared string
		head     []byte
		ok       bool
	}{
		{"image/png", png, true}, {"image/jpeg", jpeg, true}, {"image/png", jpeg, false}, {"image/jpeg", png, false},
		{"video/mp4", mp4, true}, {"video/quicktime", mp4, true}, {"video/mp4", mov, true}, {"image/png", mp4, false},
		{"", png, false}, {"image/png", []byte("hello"), false},
	} {
		if err := store.CheckSniff(tc.declared, tc.head); (err == nil) != tc.ok || (err != nil && !errors.Is(err, store.ErrMIMEMismatch)) {
			t.Errorf("%s on %q: %v", tc.declared, tc.head[:4], err)
		}
	}
	// Uploads follow it: a JPEG named .png is refused when opened.
	ctx := t.Context()
	l, _ := newLocal(t, "")
	id := store.NewUploadID()
	if _, err := l.Put(ctx, store.UploadKey(id, "a.png"), bytes.NewReader(jpeg), int64(len(jpeg)), "image/png"); err != nil {
		t.Fatal(err)
	}
	r := &store.Resolver{Store: l}
	if _, _, err := r.Open(ctx, store.UploadURI(id, "a.png")); !errors.Is(err, store.ErrMIMEMismatch) {
		t.Fatalf("jpeg named .png: %v", err)
	}
	if _, err := l.Put(ctx, store.UploadKey(id, "a.jpeg"), bytes.NewReader(jpeg), int64(len(jpeg)), ""); err != nil {
		t.Fatal(err)
	}
	rc, _, err := r.Open(ctx, store.UploadURI(id, "a.jpeg"))
	if err != nil {
		t.Fatalf("jpeg named .jpeg: %v", err)
	}
	if got := readAll(t, rc); !bytes.Equal(got, jpeg) {
		t.Fatal("upload read after the sniff differs")
	}
	rc.Close()
}
