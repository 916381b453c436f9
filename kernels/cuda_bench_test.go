//go:build cuda

package kernels

import (
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// GPU benchmarks at 2.77 MP (2560x1080). Each reports GB/s: the bytes
// the op must read and write once (its compulsory traffic) per second,
// and pct_of_copy: that rate against the device-to-device copy bandwidth
// measured in the same run (BenchmarkCUDACopy, read + write). Target:
// per-pixel ops at >= 60% of the copy bandwidth.

const benchW, benchH = 2560, 1080

var copyGBs float64 // set by BenchmarkCUDACopy, which runs first (name order)

type benchOp struct {
	name  string
	bytes int // compulsory bytes per call
	run   func(o Ops) error
}

func benchCUDA(b *testing.B, bytes int, run func() error, d *CUDA) float64 {
	b.Helper()
	if err := run(); err != nil { // warm-up: tables, pool
		b.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	gbs := float64(bytes) * float64(b.N) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(gbs, "GB/s")
	b.SetBytes(int64(bytes))
	return gbs
}

func BenchmarkCUDACopy(b *testing.B) {
	d := newTestCUDA(b)
	src := put(b, d, benchW, benchH, make([]float32, 3*benchW*benchH))
	dst, _ := d.NewImage(benchW, benchH, 3)
	n := 3 * benchW * benchH * 4
	copyGBs = benchCUDA(b, 2*n, func() error { return d.Copy(dst, src) }, d)
}

func BenchmarkCUDAOps(b *testing.B) {
	d := newTestCUDA(b)
	in := newOpInputs(benchW, benchH, 1)
	w, h := benchW, benchH
	px := w * h * 4 // bytes of one float plane
	rgb, rgb2 := put(b, d, w, h, in.rgb), put(b, d, w, h, in.rgb2)
	alpha, gray := put(b, d, w, h, in.alpha), put(b, d, w, h, in.gray)
	normals := put(b, d, w, h, in.normals)
	gl, al := put(b, d, in.lw, in.lh, in.gainLow), put(b, d, in.lw, in.lh, in.alphaLow)
	out3, _ := d.NewImage(w, h, 3)
	out1, _ := d.NewImage(w, h, 1)
	half, _ := d.NewImage(w/2, h/2, 3)
	if copyGBs == 0 {
		b.Log("run BenchmarkCUDACopy in the same invocation for pct_of_copy")
	}
	ops := []benchOp{
		{"Luma", 4 * px, func(o Ops) error { return o.Luma(out1, rgb) }},
		{"Composite", 10 * px, func(o Ops) error { return o.Composite(out3, rgb, rgb2, alpha) }},
		{"LightWrap", 14 * px, func(o Ops) error { return o.LightWrap(out3, rgb, rgb2, alpha, gray, 0.5) }},
		{"RatioRelight", 12 * px, func(o Ops) error { return o.RatioRelight(out3, rgb, rgb2, gray, alpha, 0.05, 4) }},
		{"SHEval", 6 * px, func(o Ops) error { return o.SHEval(out3, normals, []SH9{{1}, {1}, {1}}) }},
		{"GainComposite", 16 * px, func(o Ops) error { return o.GainComposite(out3, rgb, alpha, gl, rgb2, rgb, al, 0.4, 1.5) }},
		{"LabTransfer", 7 * px, func(o Ops) error {
			return o.LabTransfer(out3, rgb, alpha, LabStats{Std: [3]float64{1, 1, 1}}, LabStats{Mean: [3]float64{0.1, 0, 0}, Std: [3]float64{1, 1, 1}}, 1)
		}},
		{"HueBound", 9 * px, func(o Ops) error {
			return o.HueBound(out3, rgb2, rgb, nil, HueParams{MaxHue: 0.17, C0: 15, C1: 45, MaxGain: 4})
		}},
		{"ResizeBilinear/half", 3*px + 3*px/4, func(o Ops) error { return o.ResizeBilinear(half, rgb) }},
		{"ResizeArea/half", 3*px + 3*px/4, func(o Ops) error { return o.ResizeArea(half, rgb) }},
		{"ResizeLanczos3/half", 3*px + 3*px/4, func(o Ops) error { return o.ResizeLanczos3(half, rgb) }},
		{"GaussianBlur/4", 6 * px, func(o Ops) error { return o.GaussianBlur(out3, rgb, 4) }},
		{"BoxFilter/8", 2 * px, func(o Ops) error { return o.BoxFilter(out1, gray, 8) }},
		{"GuidedFilter/8", 8 * px, func(o Ops) error { return o.GuidedFilter(out3, gray, rgb, 8, 1e-3) }},
		{"DistanceTransform", 2 * px, func(o Ops) error { return o.DistanceTransform(out1, alpha, 0.5) }},
		{"Sum", 3 * px, func(o Ops) error { _, err := o.Sum(rgb); return err }},
		{"MaskedStats", 4 * px, func(o Ops) error { _, err := o.MaskedStats(rgb, alpha); return err }},
		{"LabStats", 4 * px, func(o Ops) error { _, err := o.LabStats(rgb, alpha); return err }},
		{"SHProjectEnv", 3 * px, func(o Ops) error { _, err := o.SHProjectEnv(rgb, 0.5); return err }},
	}
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			gbs := benchCUDA(b, op.bytes, func() error { return op.run(d) }, d)
			if copyGBs > 0 {
				b.ReportMetric(100*gbs/copyGBs, "pct_of_copy")
			}
		})
	}
}

// BenchmarkCUDAFinish1080to2160 is the device work of one vfx_finish frame
// at 2160 (ScaleOps): a 1920x1080 linear RGB image already on the device,
// UpscaleEdge to 3840x2160 (edge 1), then SharpenDownload to a YUV420P
// host frame (which waits for the codes, so every iteration is a whole
// frame, transfer to the host included). GB/s counts the compulsory
// traffic: the source read, the 2160 image written and read back, and
// the 8-bit frame written and copied down. The sub-benchmarks time the
// two ops alone (Sync once at the end for UpscaleEdge).
func BenchmarkCUDAFinish1080to2160(b *testing.B) {
	d := newTestCUDA(b)
	const sw, sh, dw, dh = 1920, 1080, 3840, 2160
	in := newOpInputs(sw, sh, 2)
	src := put(b, d, sw, sh, in.rgb)
	big, err := d.NewImage(dw, dh, 3)
	if err != nil {
		b.Fatal(err)
	}
	out, err := frame.New(frame.YUV420P, dw, dh)
	if err != nil {
		b.Fatal(err)
	}
	out.ColorSpace = frame.BT709
	srcB, bigB, yuvB := sw*sh*3*4, dw*dh*3*4, dw*dh*3/2
	up := func() error { return d.UpscaleEdge(big, src, 1) }
	sharpen := func() error { return d.SharpenDownload(out, big, 0.5) }
	cases := []struct {
		name  string
		bytes int
		run   func() error
	}{
		{"UpscaleEdge", srcB + bigB, up},
		{"SharpenDownload", bigB + 2*yuvB, sharpen},
		{"UpscaleEdge+SharpenDownload", srcB + 2*bigB + 2*yuvB, func() error {
			if err := up(); err != nil {
				return err
			}
			return sharpen()
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			benchCUDA(b, c.bytes, c.run, d)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// BenchmarkCUDAFlow854x480 is matte's flow on the GPU at 854x480
// (benchFlow in matte_flow_bench_test.go): Frame = one frame's pyramid
// and coarse-to-fine flow (4 levels x 4 iterations of Warp, FlowMismatch,
// BoxFilter, FlowSolve), Iteration = one solver iteration at full size;
// frames/s. BenchmarkFlow854x480 is the CPU figure.
func BenchmarkCUDAFlow854x480(b *testing.B) { benchFlow(b, newTestCUDA(b), 854, 480) }
