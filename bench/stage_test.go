package bench

import (
	"context"
	"errors"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render"
)

// The stages of the 1080p custom job, one benchmark each, on the fixture:
// decode (source and matte), render (the look and the composite, from the
// decoded frames to the YUV frame the encoder takes) and encode (x264 at
// veryfast and medium with the job's settings). Each reports frames/s and
// the bytes allocated per frame (B/frame), so that a regression in speed or
// in allocations shows.

// stageFrames is the length of the stage benchmarks' fixture.
const stageFrames = 24

// stageFixture writes the 1080p fixture and decodes it into memory:
// source (YUV420P) and matte (Gray8) frames.
func stageFixture(b *testing.B) (FixturePaths, codec.Info, []*frame.HostFrame, []*frame.HostFrame) {
	b.Helper()
	ctx := context.Background()
	codec.Quiet()
	p, err := WriteFixture(ctx, b.TempDir(), FixtureOptions{Width: 1920, Height: 1080, Frames: stageFrames, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	info, err := codec.Probe(ctx, codec.FileInput(p.Source), codec.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	srcs := decodeAll(b, p.Source, frame.YUV420P)
	mattes := decodeAll(b, p.Matte, frame.Gray8)
	return p, info, srcs, mattes
}

func decodeAll(b *testing.B, path string, f frame.PixelFormat) []*frame.HostFrame {
	b.Helper()
	ctx := context.Background()
	d, err := codec.NewDecoder(ctx, codec.FileInput(path), codec.DefaultLimits(), codec.DecodeOptions{Format: f})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	var out []*frame.HostFrame
	for {
		fr := &frame.HostFrame{}
		if err := d.Next(ctx, fr); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			b.Fatal(err)
		}
		out = append(out, fr)
	}
}

// stageStart is where a stage benchmark's counting starts.
type stageStart struct {
	ms  runtime.MemStats
	cpu time.Duration
}

// startStage resets the timer and records the allocation and CPU counters.
func startStage(b *testing.B) *stageStart {
	b.Helper()
	s := &stageStart{cpu: processCPU()}
	runtime.ReadMemStats(&s.ms)
	b.ResetTimer()
	return s
}

// processCPU is the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report reports frames/s, B/frame and cpu-ms/frame (the process's CPU
// time, every thread: a figure that a loaded machine disturbs less than
// the wall time) over n frames.
func (s *stageStart) report(b *testing.B, n int) {
	b.StopTimer()
	cpu := processCPU() - s.cpu
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(ms.TotalAlloc-s.ms.TotalAlloc)/float64(n), "B/frame")
	b.ReportMetric(cpu.Seconds()*1000/float64(n), "cpu-ms/frame")
}

// BenchmarkStageDecode1080p decodes the source (YUV420P) and the matte
// (Gray8) of the 1080p fixture into two reused frames, as the job does
// (one decoder thread each); BenchmarkStageDecode1080pThreaded with
// FFmpeg's automatic threading.
func BenchmarkStageDecode1080p(b *testing.B) { benchStageDecode(b, 1) }

func BenchmarkStageDecode1080pThreaded(b *testing.B) { benchStageDecode(b, 0) }

func benchStageDecode(b *testing.B, threads int) {
	ctx := context.Background()
	p, _, _, _ := stageFixture(b)
	st := startStage(b)
	n := 0
	src, matte := &frame.HostFrame{}, &frame.HostFrame{}
	for i := 0; i < b.N; i++ {
		sd, err := codec.NewDecoder(ctx, codec.FileInput(p.Source), codec.DefaultLimits(), codec.DecodeOptions{Format: frame.YUV420P, Threads: threads})
		if err != nil {
			b.Fatal(err)
		}
		md, err := codec.NewDecoder(ctx, codec.FileInput(p.Matte), codec.DefaultLimits(), codec.DecodeOptions{Format: frame.Gray8, Threads: threads})
		if err != nil {
			b.Fatal(err)
		}
		for {
			if err := sd.Next(ctx, src); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			if err := md.Next(ctx, matte); err != nil {
				b.Fatal(err)
			}
			n++
		}
		sd.Close()
		md.Close()
	}
	st.report(b, n)
}

// BenchmarkStageRender1080p renders decoded 1080p frames with a
// reference image (Renderer.FrameFromHost, the CPU backend on every core)
// into a reused YUV420P frame: the whole per-frame work between the
// decoders and the encoder.
func BenchmarkStageRender1080p(b *testing.B) {
	p, _, srcs, mattes := stageFixture(b)
	dev := kernels.NewCPU(0)
	defer dev.Close()
	ref := decodeAll(b, p.Reference, frame.RGB24)[0]
	r, out := stageRenderer(b, dev, render.Params{Prompt: "warm key light from the left", Reference: ref, Seed: 1, Width: 1920, Height: 1080}, srcs[0], mattes[0])
	b.ReportAllocs()
	st := startStage(b)
	renderFrames(b, r, out, srcs, mattes)
	st.report(b, b.N)
}

// BenchmarkStageRender1080pPlaced is BenchmarkStageRender1080p with a
// placement (the subject at 1.5 of its size, moved right and up): the
// placement's cost is the difference (issue 31 item 5).
func BenchmarkStageRender1080pPlaced(b *testing.B) {
	p, _, srcs, mattes := stageFixture(b)
	dev := kernels.NewCPU(0)
	defer dev.Close()
	ref := decodeAll(b, p.Reference, frame.RGB24)[0]
	r, out := stageRenderer(b, dev, render.Params{Prompt: "warm key light from the left", Reference: ref, Seed: 1, Width: 1920, Height: 1080,
		Placement: kernels.Placement{Scale: 1.5, X: 0.1, Y: -0.1}}, srcs[0], mattes[0])
	b.ReportAllocs()
	st := startStage(b)
	renderFrames(b, r, out, srcs, mattes)
	st.report(b, b.N)
}

// stageRenderer makes the render stage's renderer on dev with p, and its
// reused YUV420P output, and renders the first frame (src, matte) into
// it: what is made once per job is not counted. The renderer is closed
// when b ends.
func stageRenderer(b *testing.B, dev kernels.Device, p render.Params, src, matte *frame.HostFrame) (*render.Renderer, *frame.HostFrame) {
	b.Helper()
	ctx := context.Background()
	r, err := render.New(ctx, dev, p)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	out, err := frame.New(frame.YUV420P, p.Width, p.Height)
	if err != nil {
		b.Fatal(err)
	}
	out.ColorSpace = frame.BT709
	if err := r.FrameFromHost(ctx, out, src, matte); err != nil {
		b.Fatal(err)
	}
	return r, out
}

// renderFrames renders b.N frames into out, cycling through srcs and
// mattes.
func renderFrames(b *testing.B, r *render.Renderer, out *frame.HostFrame, srcs, mattes []*frame.HostFrame) {
	b.Helper()
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		k := i % len(srcs)
		if err := r.FrameFromHost(ctx, out, srcs[k], mattes[k]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStageRenderPlateGrain1080p is BenchmarkStageRender1080p with
// a grainy reference (the fixture's with AddGrain 0.02 in square-root
// luminance): plate matching adds grain to the subject in every frame's
// composite ("on"; the other stage benchmarks' plates are cleaner than
// their subjects, so no grain is added there), against the same job
// with Params.NoPlateMatch ("off").
func BenchmarkStageRenderPlateGrain1080p(b *testing.B) {
	p, _, srcs, mattes := stageFixture(b)
	dev := kernels.NewCPU(0)
	defer dev.Close()
	ref, err := AddPlateGrain(dev, decodeAll(b, p.Reference, frame.RGB24)[0], 0.02)
	if err != nil {
		b.Fatal(err)
	}
	for _, off := range []bool{false, true} {
		name := "on"
		if off {
			name = "off"
		}
		b.Run(name, func(b *testing.B) {
			r, out := stageRenderer(b, dev, render.Params{Prompt: "warm key light from the left", Reference: ref, Seed: 1,
				Width: 1920, Height: 1080, NoPlateMatch: off}, srcs[0], mattes[0])
			if _, _, g, _ := r.PlateMatch(); (g > 0) == off {
				b.Fatalf("grain %v with NoPlateMatch %v", g, off)
			}
			b.ReportAllocs()
			st := startStage(b)
			renderFrames(b, r, out, srcs, mattes)
			st.report(b, b.N)
		})
	}
}

func benchStageEncode(b *testing.B, preset string) {
	ctx := context.Background()
	_, info, srcs, _ := stageFixture(b)
	st := startStage(b)
	n := 0
	for i := 0; i < b.N; i++ {
		enc, err := codec.NewEncoder(ctx, b.TempDir()+"/render.mp4", codec.EncoderOptions{Container: "mp4",
			Width: 1920, Height: 1080, Input: frame.YUV420P, FrameRate: info.FrameRate, TimeBase: info.TimeBase,
			ColorSpace: frame.BT709, Preset: preset, CRF: 18, X264Params: "rc-lookahead=20"})
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range srcs {
			if err := enc.Write(ctx, f); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := enc.Close(); err != nil {
			b.Fatal(err)
		}
	}
	st.report(b, n)
}

// BenchmarkStageEncode1080pVeryfast and BenchmarkStageEncode1080pMedium
// encode 1080p frames with libx264 (CRF 18, rc-lookahead=20, as the
// render), including the encoder's start and its flush at the end.
func BenchmarkStageEncode1080pVeryfast(b *testing.B) { benchStageEncode(b, "veryfast") }

func BenchmarkStageEncode1080pMedium(b *testing.B) { benchStageEncode(b, "medium") }
