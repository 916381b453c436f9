package worker

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
)

// TestStageDepthPlan: only a job whose render is its one encode (source
// and matte stream-copied, no foreground, no EXR) runs with two frames of
// slack, and the plan's pooled bytes per pixel match the frames the lanes
// of each depth can hold (YUV420P source and render 1.5 B, Gray8 matte
// 1 B; half a byte of rounding), with one input frame fewer for an input
// that is stream-copied.
func TestStageDepthPlan(t *testing.T) {
	for _, tc := range []struct {
		copySource, copyAlpha, more bool
		want                        int
	}{
		{true, true, false, 2},
		{true, true, true, 3},
		{false, true, false, 3},
		{true, false, false, 3},
		{false, false, false, 3},
	} {
		if got := stageDepth(tc.copySource, tc.copyAlpha, tc.more); got != tc.want {
			t.Errorf("stageDepth(%v, %v, %v) = %d, want %d", tc.copySource, tc.copyAlpha, tc.more, got, tc.want)
		}
	}
	for _, d := range []int{2, 3} {
		for _, enc := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			ln := newLanes(d, enc[0], enc[1])
			held := 1.5*float64(cap(ln.srcPool)) + float64(cap(ln.alphaPool)) + 1.5*float64(cap(ln.outPool))
			if got := pooledPerPixel(d, enc[0], enc[1]); got != held+0.5 {
				t.Errorf("depth %d, encoded %v: plan %.1f B a pixel of pooled frames, the lanes hold %.1f (+0.5)", d, enc, got, held)
			}
		}
	}
	// A copied input keeps one frame fewer than one re-encoded: no frame of
	// it waits for an encoder.
	if got := pooledPerPixel(2, true, true) - pooledPerPixel(2, false, false); got != 2.5 {
		t.Errorf("re-encoded inputs over copied ones: %.1f B a pixel, want 2.5", got)
	}
	if pooledPerPixel(3, true, true)-pooledPerPixel(2, true, true) != 4 {
		t.Errorf("depth 3 over depth 2: %.1f B a pixel, want 4", pooledPerPixel(3, true, true)-pooledPerPixel(2, true, true))
	}
}

// TestFramesSetupError: the renderer's setup runs while the codecs are
// open, the first frames decode and the stream copies run (frames); when
// it fails, frames returns its error and stops every stage it started
// (none is left running: the goroutine count comes back down).
func TestFramesSetupError(t *testing.T) {
	fx := fixture(t, 96, 64, 12)
	info, err := codec.Probe(context.Background(), codec.FileInput(fx.Source), codec.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	req := &RenderRequest{JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "custom"}, Source: in(fx.Source), Alpha: in(fx.Matte), CRF: -1, Preset: "ultrafast"}
	s := &stream{req: req, mode: job.AlphaCustom, info: info, w: 96, h: 64,
		renderPath: filepath.Join(dir, "render.mp4"), sourcePath: filepath.Join(dir, "source.mp4"), alphaPath: filepath.Join(dir, "alpha.mp4"),
		copySource: true, copyAlpha: true}
	want := errors.New("setup failed")
	started := false
	n, err := newPipeline().frames(context.Background(), s, func() error {
		started = true
		time.Sleep(20 * time.Millisecond) // the decode stage fills its lane meanwhile
		return want
	})
	if !errors.Is(err, want) || n != 0 || !started {
		t.Fatalf("frames = %d, %v (setup ran: %v); want 0, %v", n, err, started, want)
	}
	if s.rend != nil {
		t.Fatal("a failed setup left a renderer")
	}
	for i := 0; i < 200 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines after frames returned, %d before", g, before)
	}
}
