package render

import (
	"context"
	"syscall"
	"testing"
	"time"
)

func benchFrame(b *testing.B, w, h int) {
	d := newDev(b)
	s := makeScene(w, h, [3]float32{0.3, 0.25, 0.2})
	ctx := context.Background()
	r, err := New(ctx, d, Params{Prompt: "warm key light from the left, cool blue rim light from behind, sunset beach", Seed: 1, Width: w, Height: h})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	src, alpha, dst := upload(b, d, w, h, 3, s.src), upload(b, d, w, h, 1, s.alpha), upload(b, d, w, h, 3, nil)
	if err := r.Frame(ctx, dst, src, alpha); err != nil { // warm the pools
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := r.Frame(ctx, dst, src, alpha); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(1/sec, "frames/s")
	b.ReportMetric(sec*1e3, "ms/frame")
}

// BenchmarkFrame1080pPlateGrain is BenchmarkFrame1080p over a grainy
// reference (grainyRef), where plate matching adds grain to the subject
// (a quarter of the frame) in every frame's composite ("on"), against
// the same job with NoPlateMatch ("off"); it also reports the process's
// CPU time per frame (less disturbed by a loaded machine than the wall
// time).
func BenchmarkFrame1080pPlateGrain(b *testing.B) {
	const w, h = 1920, 1080
	d := newDev(b)
	s := makeScene(w, h, [3]float32{0.3, 0.25, 0.2})
	ref := grainyRef(w, h, 2)
	ctx := context.Background()
	for _, off := range []bool{false, true} {
		name := "on"
		if off {
			name = "off"
		}
		b.Run(name, func(b *testing.B) {
			r, err := New(ctx, d, Params{Prompt: "warm key light from the left, cool blue rim light from behind", Reference: ref,
				Seed: 1, Width: w, Height: h, NoPlateMatch: off})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			src, alpha, dst := upload(b, d, w, h, 3, s.src), upload(b, d, w, h, 1, s.alpha), upload(b, d, w, h, 3, nil)
			if err := r.Frame(ctx, dst, src, alpha); err != nil {
				b.Fatal(err)
			}
			if _, _, g, _ := r.PlateMatch(); (g > 0) == off {
				b.Fatalf("grain %v with NoPlateMatch %v", g, off)
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				if err := r.Frame(ctx, dst, src, alpha); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((processCPU()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/frame")
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/frame")
		})
	}
}

// processCPU is the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFrame1080p is one 1920x1080 frame with a matte (2 workers).
func BenchmarkFrame1080p(b *testing.B) { benchFrame(b, 1920, 1080) }

// BenchmarkFrame2_77MP is one 1920x1440 frame (2.76 MP, the source limit).
func BenchmarkFrame2_77MP(b *testing.B) { benchFrame(b, 1920, 1440) }

// BenchmarkNew is the per-job setup at 1080p: backdrop synthesis, upload,
// blurred background, lighting and statistics.
func BenchmarkNew(b *testing.B) {
	d := newDev(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := New(ctx, d, Params{Prompt: "city street at night, warm key light from the left", Seed: 1, Width: 1920, Height: 1080})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkNewReference is the per-job setup at 1080p with a 1600x1200
// reference image.
func BenchmarkNewReference(b *testing.B) {
	d := newDev(b)
	ctx := context.Background()
	ref := flatRef(1600, 1200, [3]uint8{120, 90, 60})
	b.ReportAllocs()
	for b.Loop() {
		r, err := New(ctx, d, Params{Reference: ref, Seed: 1, Width: 1920, Height: 1080})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
