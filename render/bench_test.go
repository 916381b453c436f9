package render

import (
	"context"
	"testing"
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
