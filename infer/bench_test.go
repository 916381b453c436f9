package infer

import (
	"context"
	"fmt"
	"math"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSegmentISNet runs the default model on an 854x480 picture, at
// its own 1024x1024 and rescaled to 512x512 (Card.At): the time of a warm
// run (the first two runs of a session are left out) and the process's
// peak RSS, model and arena included (run one size alone for its RSS).
func BenchmarkSegmentISNet(b *testing.B) {
	for _, size := range []int{1024, 512} {
		b.Run(fmt.Sprint(size), func(b *testing.B) { benchSegment(b, size) })
	}
}

func benchSegment(b *testing.B, size int) {
	dir := installed(b)
	card, err := ISNetIMGLY().At(size)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := Open(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	m, err := rt.Load(context.Background(), card)
	if err != nil {
		b.Fatal(err)
	}
	w, h := 854, 480
	rgb := make([]float32, 3*w*h)
	for i := range rgb {
		rgb[i] = float32(0.5 + 0.4*math.Sin(float64(i%w)/17+float64(i/w)/23))
	}
	out := make([]float32, w*h)
	for i := 0; i < 2; i++ {
		if err := m.Segment(context.Background(), rgb, w, h, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		if err := m.Segment(context.Background(), rgb, w, h, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(time.Since(t0).Seconds()/float64(b.N), "s/run")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)*1024, "peak-rss-bytes")
	}
}
