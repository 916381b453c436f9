package worker

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/job"
)

// TestRunHeapWithinPlan: a 1080p custom video job with a reference (the
// `vfx bench ffmpeg` job) keeps its live heap, measured mid-job after a
// collection, under its plan's MemoryLimit. Above it the GC runs without
// pause: plate matching's one-off measure images, kept by the CPU
// device's pool, once took the live heap to 145 MB against a 140 MB limit
// and the job from 18 collections to 3,175 (1.33x -> 1.71x ffmpeg's
// wall time). Twice: over a locked-off plate, and over a panning one,
// where the camera lock keeps a shifted plate and its blur (48 MB at
// 1080p that the plan once left out: the photo fixtures of `vfx bench
// ffmpeg` then collected 402 times in 60 frames).
func TestRunHeapWithinPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("1080p jobs: not in -short")
	}
	for _, tc := range []struct {
		name string
		pan  int
	}{{"locked-off", 0}, {"panning", 6}} {
		t.Run(tc.name, func(t *testing.T) {
			fx, err := bench.WriteFixture(context.Background(), t.TempDir(), bench.FixtureOptions{Width: 1920, Height: 1080, Frames: 8, Seed: 3, Pan: tc.pan})
			if err != nil {
				t.Fatal(err)
			}
			plans := heapWithinPlan(t, fx)
			// The panning job's plan grows once, by the shifted plate
			// and blur, when the plate first moves.
			want := 1
			if tc.pan != 0 {
				want = 2
			}
			if len(plans) != want {
				t.Fatalf("%d plans, want %d: %+v", len(plans), want, plans)
			}
			if want == 2 && plans[1].HeapBytes-plans[0].HeapBytes != heapCameraPerPixel*1920*1080 {
				t.Errorf("plans %+v: want the second %d B above the first", plans, heapCameraPerPixel*1920*1080)
			}
		})
	}
}

// heapWithinPlan runs the job and checks its live heap against its last
// plan; it returns the plans OnPlan got.
func heapWithinPlan(t *testing.T, fx bench.FixturePaths) []Plan {
	p := newPipeline()
	var plan Plan
	var live []uint64
	liveHeap := func() uint64 {
		// Twice: a sync.Pool's items outlive one collection (its victim
		// cache), and the pools of a job before are not this job's.
		runtime.GC()
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	// What the test binary already holds (another test's cached model,
	// say) is not the job's: only the growth over it is compared.
	base := liveHeap()
	var plans []Plan
	var mu sync.Mutex // OnPlan runs on the render's goroutine too
	p.OnPlan = func(pl Plan) {
		mu.Lock()
		defer mu.Unlock()
		plan, plans = pl, append(plans, pl)
	}
	p.Progress = func(done, total int) {
		if done == 3 || done == 6 {
			l := liveHeap()
			live = append(live, l-min(base, l))
		}
	}
	_, err := runReq(p, context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "custom", Prompt: "warm key light from the left", Seed: 1},
		Source:     in(fx.Source),
		Alpha:      in(fx.Matte),
		Reference:  in(fx.Reference),
		CRF:        -1,
		Preset:     "ultrafast",
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if plan.HeapBytes == 0 || len(live) != 2 {
		t.Fatalf("plan %+v, %d heap samples", plan, len(live))
	}
	mu.Lock()
	defer mu.Unlock()
	for i, l := range live {
		t.Logf("live heap of the job %.1f MB (%.1f MB before it), plan %.1f MB, limit %.1f MB", float64(l)/1e6, float64(base)/1e6, float64(plan.HeapBytes)/1e6, float64(plan.MemoryLimit())/1e6)
		if int64(l) > plan.MemoryLimit() {
			t.Errorf("sample %d: live heap %d B over the plan's memory limit %d B", i, l, plan.MemoryLimit())
		}
	}
	return plans
}
