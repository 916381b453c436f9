package gen

import (
	"context"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
)

// TestEndToEndWithWorkers runs real workers in process: an image job and a
// video job from uploads complete, their outputs download, the webhook is
// delivered and each is charged its actual frames.
func TestEndToEndWithWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("renders real jobs; skipped with -short")
	}
	e := newEnv(t, envOpts{Workers: true})
	a, key := e.NewAccount(account.KindOrganization, account.AccountInput{})
	rc := newReceiver(t, 0)
	vid := apitest.VideoFixture(t, 64, 48, 6)
	img := e.Upload(key, "still.png", apitest.ReadFile(t, vid.Still))
	src := e.Upload(key, "src.mp4", apitest.ReadFile(t, vid.Source))
	matte := e.Upload(key, "matte.mp4", apitest.ReadFile(t, vid.Matte))
	ref := e.Upload(key, "ref.png", apitest.ReadFile(t, vid.Reference))
	j1 := e.Do("POST", "/v1/vfx/generations", key, apitest.With(apitest.ValidGeneration(img), "callback_url", rc.URL, "reference_image_uri", ref, "seed", 1))
	j2 := e.Do("POST", "/v1/vfx/generations", key, map[string]any{"generation_type": "video", "source_uri": src,
		"alpha_mode": "custom", "alpha_uri": matte, "prompt": "blue rim light", "max_resolution": 720})
	if j1.Status != 201 || j2.Status != 201 {
		t.Fatalf("%d %s / %d %s", j1.Status, j1.Body, j2.Status, j2.Body)
	}
	for _, id := range []string{j1.JSON(t)["id"].(string), j2.JSON(t)["id"].(string)} {
		var job map[string]any
		// Generous: each job loads and runs the network, and a loaded
		// 2-core CI machine has taken over 60 s.
		apitest.Eventually(t, 180*time.Second, "job "+id, func() bool {
			job = e.Do("GET", "/v1/vfx/generations/"+id, key, nil).JSON(t)
			return job["status"] == "completed" || job["status"] == "failed"
		})
		if job["status"] != "completed" {
			t.Fatalf("job %v", job)
		}
		for _, n := range []string{"render", "source", "alpha"} {
			res, err := http.Get(job["output"].(map[string]any)[n].(string))
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("%s: %v %v", n, err, res)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if len(b) == 0 {
				t.Fatalf("%s empty", n)
			}
		}
	}
	apitest.Eventually(t, 10*time.Second, "webhook", func() bool { return rc.n.Load() == 1 })
	apitest.Eventually(t, 10*time.Second, "billing", func() bool {
		n, _ := e.Acc.InFlight(context.Background(), a.ID)
		return n == 0
	})
	bl, err := e.Acc.Billing(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, c1 := e.Srv.Prices.Estimate("image", 1080, 1)
	_, c2 := e.Srv.Prices.Estimate("video", 720, 6)
	if d := bl.CurrentPeriodUsage - (c1 + c2); d > 1e-9 || d < -1e-9 {
		t.Fatalf("usage %v, want %v", bl.CurrentPeriodUsage, c1+c2)
	}
}

// TestEndToEndMattes runs select and auto video jobs through the API and
// real workers: both complete with their three outputs.
func TestEndToEndMattes(t *testing.T) {
	if testing.Short() {
		t.Skip("renders real jobs; skipped with -short")
	}
	e := newEnv(t, envOpts{Workers: true})
	_, key := e.NewAccount(account.KindOrganization, account.AccountInput{})
	vid := apitest.VideoFixture(t, 64, 48, 6)
	src := e.Upload(key, "src.mp4", apitest.ReadFile(t, vid.Source))
	kf := e.Upload(key, "key.png", apitest.ReadFile(t, vid.StillMatte))
	j1 := e.Do("POST", "/v1/vfx/generations", key, map[string]any{"generation_type": "video", "source_uri": src,
		"alpha_mode": "select", "alpha_uri": kf, "alpha_keyframe_index": 0, "prompt": "blue rim light"})
	j2 := e.Do("POST", "/v1/vfx/generations", key, map[string]any{"generation_type": "video", "source_uri": src,
		"alpha_mode": "auto", "prompt": "blue rim light"})
	j3 := e.Do("POST", "/v1/vfx/generations", key, map[string]any{"generation_type": "video", "source_uri": src,
		"alpha_mode": "select", "alpha_uri": kf, "alpha_keyframe_index": 6, "prompt": "blue rim light"})
	if j1.Status != 201 || j2.Status != 201 {
		t.Fatalf("%d %s / %d %s", j1.Status, j1.Body, j2.Status, j2.Body)
	}
	if j3.Status != 400 || j3.Code() != api.CodeInvalidKeyframeIndex {
		t.Fatalf("keyframe 6 of 6 frames: %d %s", j3.Status, j3.Body)
	}
	for _, id := range []string{j1.JSON(t)["id"].(string), j2.JSON(t)["id"].(string)} {
		var job map[string]any
		// Generous: each job loads and runs the network, and a loaded
		// 2-core CI machine has taken over 60 s.
		apitest.Eventually(t, 180*time.Second, "job "+id, func() bool {
			job = e.Do("GET", "/v1/vfx/generations/"+id, key, nil).JSON(t)
			return job["status"] == "completed" || job["status"] == "failed"
		})
		if job["status"] != "completed" {
			t.Fatalf("job %v", job)
		}
		for _, n := range []string{"render", "source", "alpha"} {
			res, err := http.Get(job["output"].(map[string]any)[n].(string))
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("%s: %v %v", n, err, res)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if len(b) == 0 {
				t.Fatalf("%s empty", n)
			}
		}
	}
}
