package worker

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/vfxrender/vfx/job"
)

// TestRunHeapWithinPlan: a 1080p custom video job with a reference (the
// `vfx bench ffmpeg` job) keeps its live heap, measured mid-job after a
// collection, under its plan's MemoryLimit. Above it the GC runs without
// pause: plate matching's one-off measure images, kept by the CPU
// device's pool, once took the live heap to 145 MB against a 140 MB limit
// and the job from 18 collections to 3,175 (1.33x -> 1.71x ffmpeg's
// wall time).
func TestRunHeapWithinPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1080p job: not in -short")
	}
	fx := fixture(t, 1920, 1080, 8)
	p := newPipeline()
	var plan Plan
	var live []uint64
	liveHeap := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	// What the test binary already holds (another test's cached model,
	// say) is not the job's: only the growth over it is compared.
	base := liveHeap()
	p.OnPlan = func(pl Plan) { plan = pl }
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
	for i, l := range live {
		t.Logf("live heap of the job %.1f MB (%.1f MB before it), plan %.1f MB, limit %.1f MB", float64(l)/1e6, float64(base)/1e6, float64(plan.HeapBytes)/1e6, float64(plan.MemoryLimit())/1e6)
		if int64(l) > plan.MemoryLimit() {
			t.Errorf("sample %d: live heap %d B over the plan's memory limit %d B", i, l, plan.MemoryLimit())
		}
	}
}
