package api

import (
	"context"
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
	e := newEnv(t, envOpts{workers: true})
	a, key := e.newAccount(account.KindOrganization, account.AccountInput{})
	rc := newReceiver(t, 0)
	vid := videoFixture(t, 64, 48, 6)
	img := e.upload(key, "still.png", readFile(t, vid.Still))
	src := e.upload(key, "src.mp4", readFile(t, vid.Source))
	matte := e.upload(key, "matte.mp4", readFile(t, vid.Matte))
	ref := e.upload(key, "ref.png", readFile(t, vid.Reference))
	j1 := e.do("POST", "/v1/vfx/generations", key, with(validReq(img), "callback_url", rc.URL, "reference_image_uri", ref, "seed", 1))
	j2 := e.do("POST", "/v1/vfx/generations", key, map[string]any{"generation_type": "video", "source_uri": src,
		"alpha_mode": "custom", "alpha_uri": matte, "prompt": "blue rim light", "max_resolution": 720})
	if j1.status != 201 || j2.status != 201 {
		t.Fatalf("%d %s / %d %s", j1.status, j1.body, j2.status, j2.body)
	}
	for _, id := range []string{j1.json(t)["id"].(string), j2.json(t)["id"].(string)} {
		var job map[string]any
		// Generous: each job loads and runs the network, and a loaded
		// 2-core CI machine has taken over 60 s.
		eventually(t, 180*time.Second, "job "+id, func() bool {
			job = e.do("GET", "/v1/vfx/generations/"+id, key, nil).json(t)
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
	eventually(t, 10*time.Second, "webhook", func() bool { return rc.n.Load() == 1 })
	eventually(t, 10*time.Second, "billing", func() bool {
		n, _ := e.acc.InFlight(context.Background(), a.ID)
		return n == 0
	})
	bl, err := e.acc.Billing(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, c1 := e.srv.prices.Estimate("image", 1080, 1)
	_, c2 := e.srv.prices.Estimate("video", 720, 6)
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
	e := newEnv(t, envOpts{workers: true})
	_, key := e.newAccount(account.KindOrganization, account.AccountInput{})
	vid := videoFixture(t, 64, 48, 6)
	src := e.upload(key, "src.mp4", readFile(t, vid.Source))
	kf := e.upload(key, "key.png", readFile(t, vid.StillMatte))
	j1 := e.do("POST", "/v1/vfx/generations", key, map[string]any{"generation_type": "video", "source_uri": src,
		"alpha_mode": "select", "alpha_uri": kf, "alpha_keyframe_index": 0, "prompt": "blue rim light"})
	j2 := e.do("POST", "/v1/vfx/generations", key, map[string]any{"generation_type": "video", "source_uri": src,
		"alpha_mode": "auto", "prompt": "blue rim light"})
	j3 := e.do("POST", "/v1/vfx/generations", key, map[string]any{"generation_type": "video", "source_uri": src,
		"alpha_mode": "select", "alpha_uri": kf, "alpha_keyframe_index": 6, "prompt": "blue rim light"})
	if j1.status != 201 || j2.status != 201 {
		t.Fatalf("%d %s / %d %s", j1.status, j1.body, j2.status, j2.body)
	}
	if j3.status != 400 || j3.code() != CodeInvalidKeyframeIndex {
		t.Fatalf("keyframe 6 of 6 frames: %d %s", j3.status, j3.body)
	}
	for _, id := range []string{j1.json(t)["id"].(string), j2.json(t)["id"].(string)} {
		var job map[string]any
		// Generous: each job loads and runs the network, and a loaded
		// 2-core CI machine has taken over 60 s.
		eventually(t, 180*time.Second, "job "+id, func() bool {
			job = e.do("GET", "/v1/vfx/generations/"+id, key, nil).json(t)
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
