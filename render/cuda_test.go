//go:build cuda

package render

import (
	"context"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// GPU tests of a whole rendered job (cuda build, needs a device).

func newCUDA(t testing.TB) kernels.Device {
	t.Helper()
	d, err := kernels.NewCUDA(0)
	if err != nil {
		t.Fatalf("no usable CUDA device: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestCUDAFullFrameMatchesCPU renders 3 frames at 1279x719 (odd: chroma
// edge rules) on the GPU and on the CPU and compares the YUV420P codes
// within the self-test tolerances.
func TestCUDAFullFrameMatchesCPU(t *testing.T) {
	ctx := context.Background()
	gpu := newCUDA(t)
	cpu := kernels.NewCPU(0)
	defer cpu.Close()
	const w, h, n = 1279, 719, 3
	want, err := selfTestRender(ctx, cpu, w, h, n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := selfTestRender(ctx, gpu, w, h, n)
	if err != nil {
		t.Fatal(err)
	}
	codes, differing, maxDiff := compareFrames(want, got)
	t.Logf("%d of %d codes differ, max %d", differing, codes, maxDiff)
	if maxDiff > SelfTestMaxCodeDiff || float64(differing) > SelfTestMaxDiffFraction*float64(codes) {
		t.Fatalf("%d of %d codes differ from the CPU, max difference %d", differing, codes, maxDiff)
	}
}

func TestCUDASelfTest(t *testing.T) {
	res, err := SelfTest(context.Background(), newCUDA(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
}

// benchFrames renders frames at w x h fed from host memory: each frame
// uploads a YUV420P source and a Gray8 matte, renders, and downloads
// YUV420P (FrameHost). Reports ms/frame and frames/s.
func benchFrames(b *testing.B, w, h, frames int) {
	ctx := context.Background()
	dev := newCUDA(b)
	srcF, alphaF := selfTestInputs(w, h)
	r, err := New(ctx, dev, Params{Prompt: "warm key light from the left, blue rim light, sunset", Seed: 7, Width: w, Height: h})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	src, _ := dev.NewImage(w, h, 3)
	alpha, _ := dev.NewImage(w, h, 1)
	out, _ := frame.New(frame.YUV420P, w, h)
	out.ColorSpace = frame.BT709
	step := func() {
		if err := dev.Upload(src, srcF); err != nil {
			b.Fatal(err)
		}
		if err := dev.Upload(alpha, alphaF); err != nil {
			b.Fatal(err)
		}
		if err := r.FrameHost(ctx, out, src, alpha); err != nil {
			b.Fatal(err)
		}
	}
	step()
	b.ResetTimer()
	for range b.N {
		for range frames {
			step()
		}
	}
	b.StopTimer()
	per := b.Elapsed().Seconds() / float64(b.N*frames)
	b.ReportMetric(per*1e3, "ms/frame")
	b.ReportMetric(1/per, "frames/s")
}

func BenchmarkCUDAFrame1080p(b *testing.B)   { benchFrames(b, 1920, 1080, 1) }
func BenchmarkCUDAFrame2_77MP(b *testing.B)  { benchFrames(b, 2560, 1080, 1) }
func BenchmarkCUDAJob240x1080p(b *testing.B) { benchFrames(b, 1920, 1080, 240) }
