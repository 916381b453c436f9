package product

import (
	"context"
	"encoding/base64"
	"github.com/vfxrender/vfx/api/apitest"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
)

// waitProduct polls a product job until it is terminal.
func (e *env) waitProduct(key, id string) ProductJob {
	e.T.Helper()
	var j ProductJob
	apitest.Eventually(e.T, 120*time.Second, "job "+id+" to finish", func() bool {
		j = productJob(e.T, e.Do("GET", "/v1/product-jobs/"+id, key, nil))
		switch j.Status {
		case ProductSuccess, ProductFailed, ProductCancelled, ProductCreditRequired:
			return true
		}
		return false
	})
	return j
}

// fetchOutput downloads a signed output URL into a file.
func fetchOutput(t *testing.T, url, name string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("fetch %s: %v %v", name, res, err)
	}
	defer res.Body.Close()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	return path
}

// countFrames decodes every frame of a video.
func countFrames(t *testing.T, path string) (codec.Info, int) {
	t.Helper()
	lim := codec.Limits{MaxPixels: 10_000_000, MaxFrames: 1000, MaxAspect: 4}
	dec, err := codec.NewDecoder(context.Background(), codec.FileInput(path), lim, codec.DecodeOptions{Format: frame.YUV420P})
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	defer dec.Close()
	n := 0
	for f := new(frame.HostFrame); dec.Next(context.Background(), f) == nil; n++ {
	}
	return dec.Info(), n
}

// TestProductRenderAndFinish runs real product jobs through the worker
// daemon: a standard vfx video job, its vfx_finish child at 2160 (a
// decodable render with the parent's frame count, 2160 on the shorter
// side), a fast-mode job (rendered smaller, upscaled back to the
// standard size, half the credits) and an auto-matte job.
func TestProductRenderAndFinish(t *testing.T) {
	if testing.Short() {
		t.Skip("renders real video (-short)")
	}
	e := newEnv(t, envOpts{Workers: true})
	o := e.newOrg(10000, nil)
	fx := apitest.VideoFixture(t, 96, 64, 8)
	src := "data:video/mp4;base64," + base64.StdEncoding.EncodeToString(apitest.ReadFile(t, fx.Source))

	std := productJob(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("std", src)))
	fastBody := vfxJob("fast", src)
	fastBody["inputs"].(map[string]any)["mode"] = "fast"
	fast := productJob(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, fastBody))
	autoBody := vfxJob("auto", src)
	autoBody["inputs"].(map[string]any)["alpha_mode"] = "auto"
	auto := productJob(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, autoBody))

	j := e.waitProduct(o.Key, std.ID)
	if j.Status != ProductSuccess || *j.CreditsCharged != 16 || j.Outputs["alpha"] == "" {
		t.Fatalf("standard job: %+v", j)
	}
	info, n := countFrames(t, fetchOutput(t, j.Outputs["render"], "std.mp4"))
	if n != 8 || info.DisplayWidth != 96 || info.DisplayHeight != 64 {
		t.Fatalf("standard render: %d frames %dx%d", n, info.DisplayWidth, info.DisplayHeight)
	}

	fj := e.waitProduct(o.Key, fast.ID)
	if fj.Status != ProductSuccess || *fj.CreditsCharged != 8 {
		t.Fatalf("fast job: %+v", fj)
	}
	info, n = countFrames(t, fetchOutput(t, fj.Outputs["render"], "fast.mp4"))
	if n != 8 || info.DisplayWidth != 96 || info.DisplayHeight != 64 {
		t.Fatalf("fast render: %d frames %dx%d", n, info.DisplayWidth, info.DisplayHeight)
	}
	sinfo, _ := countFrames(t, fetchOutput(t, fj.Outputs["source"], "fast-source.mp4"))
	if sinfo.DisplayHeight != 42 {
		t.Fatalf("fast mode processed at %dx%d, want a 42-pixel shorter side", sinfo.DisplayWidth, sinfo.DisplayHeight)
	}

	aj := e.waitProduct(o.Key, auto.ID)
	if aj.Status != ProductSuccess || *aj.CreditsCharged != 16 || aj.Outputs["alpha"] == "" {
		t.Fatalf("auto-matte job: %+v", aj)
	}
	if _, n = countFrames(t, fetchOutput(t, aj.Outputs["alpha"], "auto-alpha.mp4")); n != 8 {
		t.Fatalf("auto-matte alpha: %d frames, want 8", n)
	}

	r := e.Do("POST", "/v1/products/vfx_finish/jobs", o.Key, map[string]any{"model_id": "vfx-2.0", "idempotency_key": "finish",
		"inputs": map[string]any{"parent_job_id": std.ID, "target_resolution": 2160}})
	if r.Status != 202 {
		t.Fatalf("finish: %d %s", r.Status, r.Body)
	}
	child := e.waitProduct(o.Key, productJob(t, r).ID)
	if child.Status != ProductSuccess || len(child.Outputs) != 1 || *child.CreditsCharged != 8*3 {
		t.Fatalf("finish job: %+v", child)
	}
	info, n = countFrames(t, fetchOutput(t, child.Outputs["render"], "finish.mp4"))
	if n != 8 || info.DisplayHeight != 2160 || info.DisplayWidth != 3240 {
		t.Fatalf("finish render: %d frames %dx%d, want 8 at 3240x2160", n, info.DisplayWidth, info.DisplayHeight)
	}
	c := e.credits(o.ID)
	if c.Charged != 16+8+16+24 || c.Reserved != 0 {
		t.Fatalf("ledger: %+v", c)
	}
}
