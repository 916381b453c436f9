package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/store"
	"github.com/vfxrender/vfx/store/storetest"
)

// prng is a deterministic stream of pseudo-random bytes.
type prng struct{ r *rand.ChaCha8 }

func newPRNG(seed byte) prng { return prng{rand.NewChaCha8([32]byte{seed})} }

func (p prng) Read(b []byte) (int, error) { return p.r.Read(b) }

func TestS3(t *testing.T) {
	endpoint, ak, sk, stop, restart := storetest.StartMinIO(t)
	ctx := t.Context()
	cfg := store.S3Config{Endpoint: endpoint, Bucket: "vfx-test", AccessKey: ak, SecretKey: sk}

	if _, err := store.NewS3(ctx, cfg); !errors.Is(err, store.ErrBucketNotFound) {
		t.Fatalf("NewS3 without CreateBucket = %v, want ErrBucketNotFound", err)
	}
	cfg.CreateBucket = true
	s, err := store.NewS3(ctx, cfg)
	if err != nil {
		t.Fatalf("NewS3 (create bucket): %v", err)
	}
	// The bucket now exists: a second client needs no creation.
	cfg.CreateBucket = false
	if _, err := store.NewS3(ctx, cfg); err != nil {
		t.Fatalf("NewS3 on the created bucket: %v", err)
	}
	cfg.Endpoint = "http://" + endpoint
	if _, err := store.NewS3(ctx, cfg); err != nil {
		t.Fatalf("NewS3 with an http:// endpoint: %v", err)
	}

	t.Run("known size", func(t *testing.T) {
		data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
		obj, err := s.Put(ctx, "jobs/j1/render.mp4", bytes.NewReader(data), int64(len(data)), "video/mp4")
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		if obj.Size != int64(len(data)) || obj.ETag == "" || obj.ContentType != "video/mp4" {
			t.Fatalf("Put = %+v", obj)
		}
		st, err := s.Stat(ctx, "jobs/j1/render.mp4")
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		if st.Size != obj.Size || st.ETag != obj.ETag || st.ContentType != "video/mp4" || st.ModTime.IsZero() {
			t.Fatalf("Stat = %+v, Put = %+v", st, obj)
		}
		rc, o, err := s.Open(ctx, "jobs/j1/render.mp4")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer rc.Close()
		if o.Size != obj.Size || o.ContentType != "video/mp4" {
			t.Fatalf("Open object = %+v", o)
		}
		if _, err := rc.Seek(10, io.SeekStart); err != nil {
			t.Fatalf("Seek: %v", err)
		}
		buf := make([]byte, 6)
		if _, err := io.ReadFull(rc, buf); err != nil || string(buf) != "abcdef" {
			t.Fatalf("read after seek = %q %v", buf, err)
		}
		if _, err := rc.Seek(-4, io.SeekEnd); err != nil {
			t.Fatalf("Seek end: %v", err)
		}
		if got := readAll(t, rc); string(got) != "wxyz" {
			t.Fatalf("tail = %q", got)
		}
	})

	t.Run("unknown size stream", func(t *testing.T) {
		const n = 40 << 20
		want := sha256.New()
		if _, err := io.CopyN(want, newPRNG(7), n); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		obj, err := s.Put(ctx, "jobs/j2/source.mov", io.LimitReader(newPRNG(7), n), -1, "video/quicktime")
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		runtime.ReadMemStats(&after)
		if obj.Size != n {
			t.Fatalf("size = %d, want %d", obj.Size, n)
		}
		// With minio-go's default part size for unknown lengths a single
		// buffer would be ~537 MiB; with 16 MiB parts far less is allocated.
		t.Logf("streaming put of %d MiB allocated %d MiB", n>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Fatalf("streaming put allocated %d MiB", alloc>>20)
		}
		rc, o, err := s.Open(ctx, "jobs/j2/source.mov")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		got := sha256.New()
		if _, err := io.Copy(got, rc); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Sum(nil), want.Sum(nil)) || o.Size != n {
			t.Fatal("streamed object differs")
		}
	})

	t.Run("not found and delete", func(t *testing.T) {
		if _, err := s.Put(ctx, "tmp/x.png", strings.NewReader("x"), 1, "image/png"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "tmp/x.png"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if err := s.Delete(ctx, "tmp/x.png"); err != nil {
			t.Fatalf("Delete of a missing key: %v", err)
		}
		if _, err := s.Stat(ctx, "tmp/x.png"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Stat = %v, want ErrNotFound", err)
		}
		if _, _, err := s.Open(ctx, "tmp/x.png"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Open = %v, want ErrNotFound", err)
		}
		if _, err := s.Stat(ctx, "bad//key"); !errors.Is(err, store.ErrInvalidKey) {
			t.Fatalf("Stat bad key = %v, want ErrInvalidKey", err)
		}
	})

	t.Run("presigned", func(t *testing.T) {
		key := "uploads/upload_abcd1234/my clip.png"
		putURL, err := s.PresignPut(ctx, key, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		body := pngBytes(t)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, putURL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "image/png")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("presigned PUT = %d", resp.StatusCode)
		}
		st, err := s.Stat(ctx, key)
		if err != nil || st.Size != int64(len(body)) || st.ContentType != "image/png" {
			t.Fatalf("Stat after presigned PUT = %+v %v", st, err)
		}

		getURL, err := s.PresignGet(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, getURL, nil)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
			t.Fatalf("presigned GET = %d, %d bytes", resp.StatusCode, len(got))
		}

		if _, err := s.PresignGet(ctx, key, 8*24*time.Hour); !errors.Is(err, store.ErrInvalidTTL) {
			t.Fatalf("8-day presign = %v, want ErrInvalidTTL", err)
		}

		// The upload resolves through a Resolver backed by S3.
		r := &store.Resolver{Store: s}
		rc, info, err := r.Open(ctx, "vfx://uploads/upload_abcd1234/my clip.png")
		if err != nil {
			t.Fatalf("Resolver.Open: %v", err)
		}
		_ = rc.Close()
		if info.Size != int64(len(body)) || info.ContentType != "image/png" {
			t.Fatalf("info = %+v", info)
		}
	})

	// The store contract suite, on the same bucket (under its own prefix).
	t.Run("conformance", func(t *testing.T) {
		storetest.Run(t, func(*testing.T) store.Store { return s })
	})

	t.Run("stop and restart keep data", func(t *testing.T) {
		stop()
		dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer dcancel()
		if _, err := s.Stat(dctx, "jobs/j1/render.mp4"); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Stat while stopped = %v, want a transport error", err)
		}
		restart()
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		st, err := s.Stat(rctx, "jobs/j1/render.mp4")
		if err != nil || st.Size != 36 {
			t.Fatalf("Stat after restart = %+v %v", st, err)
		}
	})
}

func TestS3ConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"VFX_S3_ENDPOINT":   "minio:9000",
		"VFX_S3_BUCKET":     "vfx",
		"VFX_S3_REGION":     "eu-west-1",
		"VFX_S3_ACCESS_KEY": "ak",
		"VFX_S3_SECRET_KEY": "sk",
		"VFX_S3_SECURE":     "true",
	}
	cfg, err := store.S3ConfigFromEnv("", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := store.S3Config{Endpoint: "minio:9000", Bucket: "vfx", Region: "eu-west-1", AccessKey: "ak", SecretKey: "sk", Secure: true}
	if cfg.Endpoint != want.Endpoint || cfg.Bucket != want.Bucket || cfg.Region != want.Region ||
		cfg.AccessKey != want.AccessKey || cfg.SecretKey != want.SecretKey || cfg.Secure != want.Secure || cfg.CreateBucket || cfg.PartSize != 0 {
		t.Fatalf("cfg = %+v", cfg)
	}
	other := map[string]string{"APP_ENDPOINT": "s3", "APP_BUCKET": "b", "APP_CREATE_BUCKET": "1", "APP_PART_SIZE": "8388608"}
	cfg, err = store.S3ConfigFromEnv("APP_", func(k string) string { return other[k] })
	if err != nil || cfg.Endpoint != "s3" || !cfg.CreateBucket || cfg.PartSize != 8<<20 || cfg.Secure {
		t.Fatalf("prefixed cfg = %+v %v", cfg, err)
	}
	for name, e := range map[string]map[string]string{
		"no endpoint": {"VFX_S3_BUCKET": "b"},
		"no bucket":   {"VFX_S3_ENDPOINT": "e"},
		"bad bool":    {"VFX_S3_ENDPOINT": "e", "VFX_S3_BUCKET": "b", "VFX_S3_SECURE": "yes please"},
		"bad size":    {"VFX_S3_ENDPOINT": "e", "VFX_S3_BUCKET": "b", "VFX_S3_PART_SIZE": "16MiB"},
	} {
		if _, err := store.S3ConfigFromEnv("", func(k string) string { return e[k] }); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := store.NewS3(t.Context(), store.S3Config{Endpoint: "x:1", Bucket: "b", PartSize: 1 << 20}); err == nil {
		t.Error("part size under 5 MiB accepted")
	}
}
