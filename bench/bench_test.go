package bench

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/internal/modeltest"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/worker"
)

// TestFixture checks that the generated media decode to what the scene
// says: right size and length, and a matte that is the exact coverage.
func TestFixture(t *testing.T) {
	ctx := context.Background()
	p, err := WriteFixture(ctx, t.TempDir(), FixtureOptions{Width: 64, Height: 48, Frames: 5, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p.Source, p.Matte} {
		info, err := codec.Probe(ctx, codec.FileInput(f), codec.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if info.Kind != codec.KindVideo || info.Frames != 5 || info.Width != 64 || info.Height != 48 || info.FrameRate != (codec.Rational{Num: 25, Den: 1}) {
			t.Fatalf("%s: %+v", f, info)
		}
	}
	d, err := codec.NewDecoder(ctx, codec.FileInput(p.StillMatte), codec.DefaultLimits(), codec.DecodeOptions{Format: frame.Gray8})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := &frame.HostFrame{}
	if err := d.Next(ctx, m); err != nil {
		t.Fatal(err)
	}
	sc := NewScene(64, 48, 5, 2)
	inside, outside := 0, 0
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			_, _, _, a := sc.Pixel(0, x, y)
			if got := m.Planes[0][y*m.Strides[0]+x]; got != to8(a) {
				t.Fatalf("matte (%d,%d) = %d, want %d", x, y, got, to8(a))
			}
			if a == 1 {
				inside++
			} else if a == 0 {
				outside++
			}
		}
	}
	if inside == 0 || outside == 0 {
		t.Fatalf("scene has %d subject and %d background pixels", inside, outside)
	}
	if _, err := WriteFixture(ctx, t.TempDir(), FixtureOptions{Width: 63, Height: 48, Frames: 1}); err == nil {
		t.Fatal("odd width accepted")
	}
}

func peakRSS() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Maxrss) * 1024
}

func benchJob(b *testing.B, typ string, w, h, frames int, preset string) {
	benchJobMode(b, typ, "custom", w, h, frames, preset)
}

func benchJobMode(b *testing.B, typ, mode string, w, h, frames int, preset string) {
	ctx := context.Background()
	codec.Quiet()
	p, err := WriteFixture(ctx, b.TempDir(), FixtureOptions{Width: w, Height: h, Frames: frames, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	src, alpha := p.Source, p.Matte
	if typ == "image" || mode == "select" {
		alpha = p.StillMatte // select: the keyframe matte of frame 0
	}
	if typ == "image" {
		src = p.Still
	}
	dev := kernels.NewCPU(0)
	defer dev.Close()
	pl := &worker.Pipeline{Device: dev}
	if mode == "select" || mode == "auto" {
		// The network's time and memory are part of the job; its two slow
		// first runs are paid before, as a worker does at start (warmModel).
		m := modeltest.Load(b)
		if err := m.Warm(ctx); err != nil {
			b.Fatal(err)
		}
		pl.Net = m
	}
	in := func(s string) *codec.Input { i := codec.FileInput(s); return &i }
	req := worker.RenderRequest{
		JobRequest: job.JobRequest{GenerationType: typ, AlphaMode: mode, Prompt: "warm key light from the left", Seed: 1},
		Source:     in(src),
		Alpha:      in(alpha),
		Reference:  in(p.Reference),
		Preset:     preset,
		CRF:        18,
	}
	j, err := worker.Validate(req)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		res, err := pl.Run(ctx, j, b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		n += res.Frames
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/job")
	b.ReportMetric(peakRSS(), "peak-rss-bytes")
}

// BenchmarkJobVideo1080p240 is the whole 240-frame 1080p custom-matte job
// (decode, relight, composite, three encodes) at x264 preset medium.
func BenchmarkJobVideo1080p240(b *testing.B) { benchJob(b, "video", 1920, 1080, 240, "medium") }

// BenchmarkJobImage2_7MP is a 2560x1080 (2.76 MP) image job: the largest
// source that is not scaled down by max_resolution 1080.
func BenchmarkJobImage2_7MP(b *testing.B) { benchJob(b, "image", 2560, 1080, 1, "medium") }

// BenchmarkJobVideoSelect2_7MP240 is the largest select job: 240 frames
// at 2560x1080 (2.76 MP), the keyframe matte of frame 0 propagated through
// the clip, then rendered. Its peak-rss-bytes is the memory bound of the
// issue (run it alone: the figure is the process's peak).
func BenchmarkJobVideoSelect2_7MP240(b *testing.B) {
	benchJobMode(b, "video", "select", 2560, 1080, 240, "medium")
}

// BenchmarkJobVideoSelect480p is a 240-frame 854x480 select job, whole
// (decode, the network on select's schedule, every 4th frame on the CPU,
// propagation, render, three encodes). The bound is 120 s a job
// on 2 cores.
func BenchmarkJobVideoSelect480p(b *testing.B) {
	benchJobMode(b, "video", "select", 854, 480, 240, "medium")
}

// BenchmarkJobVideoAuto480p is a 240-frame 854x480 auto job, whole (decode,
// the network on its schedule, propagation, render, three encodes).
func BenchmarkJobVideoAuto480p(b *testing.B) {
	benchJobMode(b, "video", "auto", 854, 480, 240, "medium")
}

// BenchmarkDecodeFixture1080p decodes the fixture video (H.264 1080p).
func BenchmarkDecodeFixture1080p(b *testing.B) {
	ctx := context.Background()
	p, err := WriteFixture(ctx, b.TempDir(), FixtureOptions{Width: 1920, Height: 1080, Frames: 48})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		d, err := codec.NewDecoder(ctx, codec.FileInput(p.Source), codec.DefaultLimits(), codec.DecodeOptions{Format: frame.YUV420P})
		if err != nil {
			b.Fatal(err)
		}
		f := &frame.HostFrame{}
		for {
			if err := d.Next(ctx, f); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			n++
		}
		d.Close()
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(n)*1920*1080*1.5/b.Elapsed().Seconds()/1e6, "MB/s")
}

// BenchmarkFinishJob1080to2160 is the worker side of a whole vfx_finish
// job: a 1080p H.264 parent render (48 frames of the fixture) decoded,
// upscaled to 3840x2160 (UpscaleEdge + SharpenDownload) and encoded with
// x264 at the default preset (medium), as worker.Upscale does it.
func BenchmarkFinishJob1080to2160(b *testing.B) {
	ctx := context.Background()
	codec.Quiet()
	p, err := WriteFixture(ctx, b.TempDir(), FixtureOptions{Width: 1920, Height: 1080, Frames: 48, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	dev := kernels.NewCPU(0)
	defer dev.Close()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		res, err := worker.Upscale(ctx, dev, codec.FileInput(p.Source), b.TempDir()+"/finish.mp4", worker.UpscaleOptions{ShortSide: 2160})
		if err != nil {
			b.Fatal(err)
		}
		if res.Frames != 48 || res.Width != 3840 || res.Height != 2160 {
			b.Fatalf("finish: %+v, want 48 frames at 3840x2160", res)
		}
		n += res.Frames
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(peakRSS(), "peak-rss-bytes")
}
