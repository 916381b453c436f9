package kernels

import (
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/vfxrender/vfx/frame"
)

// Benchmarks run every op at the sizes the pipeline uses: full frames at
// 1920x1080 (and the 2.77 MP source limit), low-resolution analysis at
// 480x270. SetBytes counts bytes read plus written, so MB/s shows memory
// throughput; frames/s is reported for per-frame ops.

const (
	fw, fh = 1920, 1080
	lw, lh = 480, 270
	// 2216x1250 = 2,770,000 pixels: the largest source allowed.
	mw, mh = 2216, 1250
)

type benchEnv struct {
	d *CPU
	b *testing.B
}

func newBench(b *testing.B) *benchEnv {
	b.Helper()
	return &benchEnv{d: NewCPU(0), b: b}
}

// img is a picture-like image: smooth waves spanning about [lo, hi]
// (slightly beyond, in contiguous patches, like clipped highlights and
// crushed shadows), plus mild per-pixel noise. Uniform random pixels would
// defeat the branch predictor and the caches in ways real frames do not.
func (e *benchEnv) img(w, h, c int, lo, hi float64) Image {
	rng := newRNG(uint64(w*h*c + int(100*hi)))
	v := make([]float32, w*h*c)
	for ch := range c {
		for y := range h {
			for x := range w {
				t := 0.5 + 0.55*math.Sin(float64(x)*0.011+float64(ch))*math.Cos(float64(y)*0.017-0.3*float64(ch))
				t += 0.02 * (rng.Float64() - 0.5)
				v[ch*w*h+y*w+x] = float32(lo + (hi-lo)*t)
			}
		}
	}
	return img(e.b, e.d, w, h, c, v)
}

// alpha is a matte: an ellipse of 1 with a soft edge over a 0 background.
func (e *benchEnv) alpha(w, h int) Image {
	v := make([]float32, w*h)
	for y := range h {
		for x := range w {
			dx, dy := (float64(x)-0.5*float64(w))/(0.3*float64(w)), (float64(y)-0.55*float64(h))/(0.4*float64(h))
			r := math.Sqrt(dx*dx + dy*dy)
			v[y*w+x] = float32(math.Max(0, math.Min(1, (1.05-r)*12)))
		}
	}
	return img(e.b, e.d, w, h, 1, v)
}

// run times fn, reporting bytes per op and frames per second.
func (e *benchEnv) run(bytes int64, fn func() error) {
	b := e.b
	b.ReportAllocs()
	b.SetBytes(bytes)
	if err := fn(); err != nil { // warm-up; fills the pool
		b.Fatal(err)
	}
	c0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		if err := fn(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	// CPU time per op over all threads: stable when the machine is shared.
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e6, "cpu-ms/op")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func px(w, h, c int) int64 { return int64(w) * int64(h) * int64(c) * 4 }

func randFrame(f frame.PixelFormat, w, h int) *frame.HostFrame {
	hf, err := frame.New(f, w, h)
	if err != nil {
		panic(err)
	}
	// A picture-like frame: smooth luma and chroma waves plus noise.
	rng := newRNG(7)
	for p := range f.NumPlanes() {
		pw, ph := hf.PlaneDims(p)
		for y := range ph {
			for x := range pw {
				v := 128 + 100*math.Sin(float64(x)*0.013+float64(p))*math.Cos(float64(y)*0.021)
				if f == frame.YUV420P && p > 0 {
					v = 128 + 50*math.Sin(float64(x)*0.02-float64(p))*math.Cos(float64(y)*0.03)
				}
				v += 8 * (rng.Float64() - 0.5)
				hf.Planes[p][y*hf.Strides[p]+x] = byte(math.Max(0, math.Min(255, v)))
			}
		}
	}
	hf.ColorSpace = frame.BT709
	return hf
}

func frameBytes(f *frame.HostFrame) int64 {
	n := 0
	for p := range f.Format.NumPlanes() {
		n += len(f.Planes[p])
	}
	return int64(n)
}

func benchUpload(b *testing.B, f frame.PixelFormat, w, h int) {
	e := newBench(b)
	c := 3
	if f == frame.Gray8 {
		c = 1
	}
	hf := randFrame(f, w, h)
	m := e.img(w, h, c, 0, 1)
	e.run(frameBytes(hf)+px(w, h, c), func() error { return e.d.Upload(m, hf) })
}

func benchDownload(b *testing.B, f frame.PixelFormat, w, h int) {
	e := newBench(b)
	c := 3
	if f == frame.Gray8 {
		c = 1
	}
	hf := randFrame(f, w, h)
	m := e.img(w, h, c, -0.05, 1.05)
	e.run(frameBytes(hf)+px(w, h, c), func() error { return e.d.Download(hf, m) })
}

func BenchmarkUploadYUV420P(b *testing.B)      { benchUpload(b, frame.YUV420P, fw, fh) }
func BenchmarkUploadRGB24(b *testing.B)        { benchUpload(b, frame.RGB24, fw, fh) }
func BenchmarkUploadGray8(b *testing.B)        { benchUpload(b, frame.Gray8, fw, fh) }
func BenchmarkDownloadYUV420P(b *testing.B)    { benchDownload(b, frame.YUV420P, fw, fh) }
func BenchmarkDownloadRGB24(b *testing.B)      { benchDownload(b, frame.RGB24, fw, fh) }
func BenchmarkDownloadGray8(b *testing.B)      { benchDownload(b, frame.Gray8, fw, fh) }
func BenchmarkUpload2_77MP(b *testing.B)       { benchUpload(b, frame.YUV420P, mw, mh) }
func BenchmarkDownload2_77MP(b *testing.B)     { benchDownload(b, frame.YUV420P, mw, mh) }
func BenchmarkUploadRGB24_2_77MP(b *testing.B) { benchUpload(b, frame.RGB24, mw, mh) }

func BenchmarkNewImageFree(b *testing.B) {
	e := newBench(b)
	e.run(px(fw, fh, 3), func() error {
		m, err := e.d.NewImage(fw, fh, 3)
		e.d.Free(m)
		return err
	})
}

func BenchmarkFill(b *testing.B) {
	e := newBench(b)
	m := e.img(fw, fh, 3, 0, 1)
	e.run(px(fw, fh, 3), func() error { return e.d.Fill(m, []float32{1, 2, 3}) })
}

func BenchmarkCopy(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	e.run(2*px(fw, fh, 3), func() error { return e.d.Copy(o, s) })
}

func BenchmarkLuma(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 1, 0, 1)
	e.run(px(fw, fh, 4), func() error { return e.d.Luma(o, s) })
}

func BenchmarkResizeBilinearUp(b *testing.B) {
	e := newBench(b)
	s, o := e.img(lw, lh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	e.run(px(lw, lh, 3)+px(fw, fh, 3), func() error { return e.d.ResizeBilinear(o, s) })
}

func BenchmarkResizeArea(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 3, 0, 1), e.img(lw, lh, 3, 0, 1)
	e.run(px(fw, fh, 3)+px(lw, lh, 3), func() error { return e.d.ResizeArea(o, s) })
}

func BenchmarkResizeArea1ch(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 1, 0, 1), e.img(lw, lh, 1, 0, 1)
	e.run(px(fw, fh, 1)+px(lw, lh, 1), func() error { return e.d.ResizeArea(o, s) })
}

func BenchmarkResizeLanczos3Down(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 3, 0, 1), e.img(lw, lh, 3, 0, 1)
	e.run(px(fw, fh, 3)+px(lw, lh, 3), func() error { return e.d.ResizeLanczos3(o, s) })
}

func BenchmarkResizeLanczos3Up2x(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw/2, fh/2, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	e.run(px(fw/2, fh/2, 3)+px(fw, fh, 3), func() error { return e.d.ResizeLanczos3(o, s) })
}

func BenchmarkCoverFit(b *testing.B) {
	e := newBench(b)
	s, o := e.img(2048, 1365, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	e.run(px(2048, 1365, 3)+px(fw, fh, 3), func() error { return e.d.CoverFit(o, s) })
}

func BenchmarkGaussianBlur(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	e.run(2*px(fw, fh, 3), func() error { return e.d.GaussianBlur(o, s, 2) })
}

func BenchmarkGaussianBlurLow(b *testing.B) {
	e := newBench(b)
	s, o := e.img(lw, lh, 3, 0, 1), e.img(lw, lh, 3, 0, 1)
	e.run(2*px(lw, lh, 3), func() error { return e.d.GaussianBlur(o, s, 8) })
}

func BenchmarkBoxFilter(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 1, 0, 1), e.img(fw, fh, 1, 0, 1)
	e.run(2*px(fw, fh, 1), func() error { return e.d.BoxFilter(o, s, 8) })
}

func BenchmarkGuidedFilter(b *testing.B) {
	e := newBench(b)
	g, s, o := e.img(fw, fh, 1, 0, 1), e.alpha(fw, fh), e.img(fw, fh, 1, 0, 1)
	e.run(3*px(fw, fh, 1), func() error { return e.d.GuidedFilter(o, g, s, 8, 1e-3) })
}

// BenchmarkGuidedFilterColour is the matte refiner's filter at 1080p (a
// 3-channel guide, one matte channel) against BenchmarkGuidedFilter's
// 1-channel guide.
func BenchmarkGuidedFilterColour(b *testing.B) {
	e := newBench(b)
	g, s, o := e.img(fw, fh, 3, 0, 1), e.alpha(fw, fh), e.img(fw, fh, 1, 0, 1)
	e.run(5*px(fw, fh, 1), func() error { return e.d.GuidedFilterColour(o, g, s, 8, 2e-4) })
}

// BenchmarkGuidedFilterColourFast is the matte refiner's use: the
// coefficients at the low size (a matte of lw x lh), applied to a 1080p
// colour guide.
func BenchmarkGuidedFilterColourFast(b *testing.B) {
	e := newBench(b)
	g, s, o := e.img(fw, fh, 3, 0, 1), e.img(lw, lh, 1, 0, 1), e.img(fw, fh, 1, 0, 1)
	e.run(4*px(fw, fh, 1), func() error { return e.d.GuidedFilterColour(o, g, s, 2, 2e-4) })
}

func BenchmarkGuidedFilterLow(b *testing.B) {
	e := newBench(b)
	g, s, o := e.img(lw, lh, 1, 0, 1), e.img(lw, lh, 3, 0, 1), e.img(lw, lh, 3, 0, 1)
	e.run(px(lw, lh, 7), func() error { return e.d.GuidedFilter(o, g, s, 4, 1e-3) })
}

func BenchmarkComposite(b *testing.B) {
	e := newBench(b)
	f, g, a, o := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1), e.alpha(fw, fh), e.img(fw, fh, 3, 0, 1)
	e.run(px(fw, fh, 10), func() error { return e.d.Composite(o, f, g, a) })
}

func BenchmarkLightWrap(b *testing.B) {
	e := newBench(b)
	c, g, a, ab, o := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1), e.alpha(fw, fh), e.alpha(fw, fh), e.img(fw, fh, 3, 0, 1)
	e.run(px(fw, fh, 11), func() error { return e.d.LightWrap(o, c, g, a, ab, 0.5) })
}

func BenchmarkRatioRelight(b *testing.B) {
	e := newBench(b)
	s, en, eo, a, o := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 1, 0, 1), e.alpha(fw, fh), e.img(fw, fh, 3, 0, 1)
	e.run(px(fw, fh, 11), func() error { return e.d.RatioRelight(o, s, en, eo, a, 0.05, 4) })
}

func BenchmarkGainComposite(b *testing.B) {
	e := newBench(b)
	s, a, bg, bb, o := e.img(fw, fh, 3, 0, 1), e.alpha(fw, fh), e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	g, ab := e.img(lw, lh, 3, 0.5, 1.5), e.alpha(lw, lh)
	e.run(px(fw, fh, 13)+px(lw, lh, 4), func() error { return e.d.GainComposite(o, s, a, g, bg, bb, ab, 0.4, 4) })
}

func BenchmarkGainCompositeNoAlpha(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	g := e.img(lw, lh, 3, 0.5, 1.5)
	e.run(px(fw, fh, 6)+px(lw, lh, 3), func() error { return e.d.GainComposite(o, s, nil, g, nil, nil, nil, 0, 4) })
}

func BenchmarkSum(b *testing.B) {
	e := newBench(b)
	s := e.img(fw, fh, 3, 0, 1)
	e.run(px(fw, fh, 3), func() error { _, err := e.d.Sum(s); return err })
}

func BenchmarkMaskedStats(b *testing.B) {
	e := newBench(b)
	s, a := e.img(fw, fh, 3, 0, 1), e.alpha(fw, fh)
	e.run(px(fw, fh, 4), func() error { _, err := e.d.MaskedStats(s, a); return err })
}

func BenchmarkSHProjectEnv(b *testing.B) {
	e := newBench(b)
	s := e.img(lw, lh, 3, 0, 1)
	e.run(px(lw, lh, 3), func() error { _, err := e.d.SHProjectEnv(s, 0.5); return err })
}

func BenchmarkSHNormalEquations(b *testing.B) {
	e := newBench(b)
	s, a := e.img(lw, lh, 1, 0, 1), e.alpha(lw, lh)
	n := img(b, e.d, lw, lh, 3, randNormals(newRNG(3), lw*lh, true))
	e.run(px(lw, lh, 5), func() error { _, _, err := e.d.SHNormalEquations(s, n, a); return err })
}

func BenchmarkSHEval(b *testing.B) {
	e := newBench(b)
	o := e.img(lw, lh, 3, 0, 1)
	n := img(b, e.d, lw, lh, 3, randNormals(newRNG(3), lw*lh, true))
	cf := []SH9{{1, 0.1, 0.2, 0.3}, {1, 0.1}, {1}}
	e.run(px(lw, lh, 6), func() error { return e.d.SHEval(o, n, cf) })
}

func BenchmarkLabStats(b *testing.B) {
	e := newBench(b)
	s, a := e.img(lw, lh, 3, 0, 1), e.alpha(lw, lh)
	e.run(px(lw, lh, 4), func() error { _, err := e.d.LabStats(s, a); return err })
}

func BenchmarkLabTransfer(b *testing.B) {
	e := newBench(b)
	s, o := e.img(lw, lh, 3, 0, 1), e.img(lw, lh, 3, 0, 1)
	from := LabStats{Mean: [3]float64{-1, 0, 0}, Std: [3]float64{0.5, 0.1, 0.05}}
	to := LabStats{Mean: [3]float64{-1.2, 0.02, 0.01}, Std: [3]float64{0.4, 0.08, 0.04}}
	e.run(px(lw, lh, 6), func() error { return e.d.LabTransfer(o, s, nil, from, to, 0.7) })
}

// BenchmarkHueBound: the render's call (the frame's gain at the working
// size against the source), gains of 0.8 to 1.25 per channel (most
// pixels within the bound, as on a subject).
func BenchmarkHueBound(b *testing.B) {
	e := newBench(b)
	g, r, o := e.img(lw, lh, 3, 0.8, 1.25), e.img(lw, lh, 3, 0, 1), e.img(lw, lh, 3, 0, 1)
	p := HueParams{MaxHue: 0.17, C0: 15, C1: 45, MaxGain: 4}
	e.run(px(lw, lh, 9), func() error { return e.d.HueBound(o, g, r, nil, p) })
}

func BenchmarkLabTransferFull(b *testing.B) {
	e := newBench(b)
	s, o, a := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1), e.alpha(fw, fh)
	from := LabStats{Mean: [3]float64{-1, 0, 0}, Std: [3]float64{0.5, 0.1, 0.05}}
	to := LabStats{Mean: [3]float64{-1.2, 0.02, 0.01}, Std: [3]float64{0.4, 0.08, 0.04}}
	e.run(px(fw, fh, 7), func() error { return e.d.LabTransfer(o, s, a, from, to, 0.7) })
}

func BenchmarkDistanceTransformLow(b *testing.B) {
	e := newBench(b)
	a, o := e.alpha(lw, lh), e.img(lw, lh, 1, 0, 1)
	e.run(px(lw, lh, 2), func() error { return e.d.DistanceTransform(o, a, 0.5) })
}

func BenchmarkDistanceTransform(b *testing.B) {
	e := newBench(b)
	// A disc matte: few background pixels inside, long distances.
	m := make([]float32, fw*fh)
	for y := range fh {
		for x := range fw {
			dx, dy := float32(x-fw/2), float32(y-fh/2)
			if dx*dx+dy*dy < 400*400 {
				m[y*fw+x] = 1
			}
		}
	}
	a, o := img(b, e.d, fw, fh, 1, m), e.img(fw, fh, 1, 0, 1)
	e.run(px(fw, fh, 2), func() error { return e.d.DistanceTransform(o, a, 0.5) })
}

func BenchmarkNormalsFromMatte(b *testing.B) {
	e := newBench(b)
	dist, det, o := e.img(lw, lh, 1, 0, 30), e.img(lw, lh, 1, 0, 1), e.img(lw, lh, 3, 0, 1)
	e.run(px(lw, lh, 5), func() error { return e.d.NormalsFromMatte(o, dist, det, 20, 0.5) })
}

func BenchmarkNewCPU(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		_ = NewCPU(2)
	}
}

// BenchmarkShift1080p is the camera lock's per-frame plate move: a
// full-resolution 3-channel image shifted by a fractional offset.
func BenchmarkShift1080p(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	e.run(px(fw, fh, 6), func() error { return e.d.Shift(o, s, -3.37, 1.61) })
}

// BenchmarkShift1080pClamped is BenchmarkShift1080p after a long pan:
// the offset (-700.37 px) puts the first 700 columns of every row past
// the border (clamped: each block's taps are one column).
func BenchmarkShift1080pClamped(b *testing.B) {
	e := newBench(b)
	s, o := e.img(fw, fh, 3, 0, 1), e.img(fw, fh, 3, 0, 1)
	e.run(px(fw, fh, 6), func() error { return e.d.Shift(o, s, -700.37, 1.61) })
}
