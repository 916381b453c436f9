package worker

import (
	"context"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
)

// TestRunHeapWithinPlan: a 1080p custom video job with a reference (the
// `vfx bench ffmpeg` job) keeps its live heap, measured mid-job after a
// collection, under its plan's MemoryLimit. Above it the GC runs without
// pause: plate matching's one-off measure images, kept by the CPU
// device's pool, once took the live heap to 145 MB against a 140 MB limit
// and the job from 18 collections to 3,175 (1.33x -> 1.71x ffmpeg's
// wall time). Twice: over a locked-off plate, and over a panning one,
// where the camera lock moves the plate and its blur. The composite
// samples them at the moved position itself; they were once shifted into
// two more full-resolution images (48 MB at 1080p, a live heap of
// 162-165 MB against 113-118 MB locked off), which the same plan's limit
// (142.5 MB) would refuse: both jobs have the one plan.
func TestRunHeapWithinPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("1080p jobs: not in -short")
	}
	var first Plan
	for _, tc := range []struct {
		name string
		pan  int
	}{{"locked-off", 0}, {"panning", 6}} {
		t.Run(tc.name, func(t *testing.T) {
			fx, err := bench.WriteFixture(context.Background(), t.TempDir(), bench.FixtureOptions{Width: 1920, Height: 1080, Frames: 8, Seed: 3, Pan: tc.pan})
			if err != nil {
				t.Fatal(err)
			}
			plans, res := heapWithinPlan(t, fx)
			if len(plans) != 1 {
				t.Fatalf("%d plans, want 1: %+v", len(plans), plans)
			}
			if first.HeapBytes == 0 {
				first = plans[0]
			} else if plans[0] != first {
				t.Errorf("plan %+v, want the locked-off job's %+v", plans[0], first)
			}
			// The plate moved in the panning job (and only there): the
			// output's bottom-left corner, plate only (the reference's
			// ground, dotted with lights), changes from the first frame
			// to the last.
			_, out := decodeAll(t, res.Render, frame.RGB24)
			d := cornerDiff(out[0], out[len(out)-1], 256)
			t.Logf("bottom-left corner, first to last frame: mean difference %.2f codes", d)
			if moved := d > 2; moved != (tc.pan != 0) {
				t.Errorf("bottom-left corner's mean difference %.2f codes: plate moved %v, want %v", d, moved, tc.pan != 0)
			}
		})
	}
}

// cornerDiff is the mean absolute difference of the bottom-left n x n
// pixels' codes of two RGB24 frames.
func cornerDiff(a, b *frame.HostFrame, n int) float64 {
	var s float64
	for y := a.Height - n; y < a.Height; y++ {
		ra, rb := a.Planes[0][y*a.Strides[0]:][:3*n], b.Planes[0][y*b.Strides[0]:][:3*n]
		for i := range ra {
			s += math.Abs(float64(ra[i]) - float64(rb[i]))
		}
	}
	return s / float64(3*n*n)
}

// heapWithinPlan runs the job and checks its live heap against its last
// plan; it returns the plans OnPlan got and the job's result.
func heapWithinPlan(t *testing.T, fx bench.FixturePaths) ([]Plan, Result) {
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
	var events []string
	var first uint64  // live heap after the first frame, the setup's images still held
	var mu sync.Mutex // OnPlan runs on the render's goroutine too
	p.OnPlan = func(pl Plan) {
		mu.Lock()
		defer mu.Unlock()
		plan, plans = pl, append(plans, pl)
		events = append(events, "plan")
	}
	p.OnRenderSetup = func(pl Plan) {
		mu.Lock()
		defer mu.Unlock()
		if pl != plan {
			t.Errorf("OnRenderSetup's plan %+v, want OnPlan's %+v", pl, plan)
		}
		events = append(events, "setup")
	}
	p.Progress = func(done, total int) {
		if done == 1 {
			l := liveHeap()
			mu.Lock()
			first = l - min(base, l)
			events = append(events, "frame 1")
			mu.Unlock()
		}
		if done == 3 || done == 6 {
			l := liveHeap()
			live = append(live, l-min(base, l))
		}
	}
	res, err := runReq(p, context.Background(), RenderRequest{
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
	// The GC limit a process sets from the hooks: the plan's from OnPlan,
	// the setup's from OnRenderSetup until the first frame is encoded.
	if got := strings.Join(events, ", "); got != "plan, setup, frame 1" {
		t.Errorf("hooks in the order %q, want plan, setup, frame 1", got)
	}
	t.Logf("live heap after the first frame %.1f MB, setup limit %.1f MB", float64(first)/1e6, float64(plan.SetupMemoryLimit())/1e6)
	if int64(first) > plan.SetupMemoryLimit() {
		t.Errorf("live heap after the first frame %d B over the setup's memory limit %d B", first, plan.SetupMemoryLimit())
	}
	for i, l := range live {
		t.Logf("live heap of the job %.1f MB (%.1f MB before it), plan %.1f MB, limit %.1f MB", float64(l)/1e6, float64(base)/1e6, float64(plan.HeapBytes)/1e6, float64(plan.MemoryLimit())/1e6)
		if int64(l) > plan.MemoryLimit() {
			t.Errorf("sample %d: live heap %d B over the plan's memory limit %d B", i, l, plan.MemoryLimit())
		}
	}
	return plans, res
}
