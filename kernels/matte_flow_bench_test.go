package kernels

import (
	"math"
	"testing"
)

// flowScene returns a realistic flow test scene of w x h: a smooth
// textured luma frame ref, a frame tgt with tgt(x + u(x)) = ref(x) for
// the 2-channel flow u (a translation of (1.6, -0.9) pixels plus a
// rotation of 0.02 rad about the centre), and a backward flow bwd close
// to -u with a little noise (so forward-backward errors are not all 0;
// near the borders x + u leaves the image).
func flowScene(w, h int, seed uint64) (ref, tgt, fwd, bwd []float32) {
	n := w * h
	cx, cy := float64(w-1)/2, float64(h-1)/2
	const tx, ty, th = 1.6, -0.9, 0.02
	flowAt := func(x, y float64) (float64, float64) {
		return tx - th*(y-cy), ty + th*(x-cx)
	}
	tex := func(x, y float64) float64 {
		return 0.5 + 0.2*math.Sin(0.31*x+0.17*y+0.4) + 0.15*math.Sin(0.11*x-0.23*y) + 0.1*math.Cos(0.05*x*y/float64(max(w, h))+0.13*x)
	}
	ref, tgt = make([]float32, n), make([]float32, n)
	fwd, bwd = make([]float32, 2*n), make([]float32, 2*n)
	rng := newRNG(seed)
	for y := range h {
		for x := range w {
			i := y*w + x
			fx, fy := float64(x), float64(y)
			ref[i] = float32(tex(fx, fy))
			u, v := flowAt(fx, fy)
			fwd[i], fwd[n+i] = float32(u), float32(v)
			// tgt at p is ref at p - u(p) (u varies slowly: close to exact).
			tgt[i] = float32(tex(fx-u, fy-v))
			bwd[i] = float32(-u + 0.3*(rng.Float64()-0.5))
			bwd[n+i] = float32(-v + 0.3*(rng.Float64()-0.5))
		}
	}
	return ref, tgt, fwd, bwd
}

// flowBench holds the device images of the flow benchmark: matte's
// coarse-to-fine Lucas–Kanade flow between two frames (4 levels, 4
// iterations, window 3, the defaults of matte.DefaultFlowOptions).
type flowBench struct {
	sizes               [][2]int
	refLum, tgtLum      []Image // 1 ch per level
	refGrad, refTensor  []Image // 2 and 3 ch per level
	tgtGrad, tgtTensor  []Image
	warped, mis, flows  []Image // 1, 2 and 2 ch per level
	levels, iters, win  int
	lambda, step, sigma float32
}

func newFlowBench(t testing.TB, d Device, w, h int) *flowBench {
	t.Helper()
	fb := &flowBench{levels: 4, iters: 4, win: 3, lambda: 2e-4, step: 1, sigma: 1}
	lw, lh := w, h
	for l := 0; l < fb.levels; l++ {
		if l > 0 {
			if lw < 16 || lh < 16 {
				break
			}
			lw, lh = (lw+1)/2, (lh+1)/2
		}
		fb.sizes = append(fb.sizes, [2]int{lw, lh})
	}
	mk := func(s [2]int, c int) Image {
		m, err := d.NewImage(s[0], s[1], c)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, s := range fb.sizes {
		fb.refLum, fb.tgtLum = append(fb.refLum, mk(s, 1)), append(fb.tgtLum, mk(s, 1))
		fb.refGrad, fb.tgtGrad = append(fb.refGrad, mk(s, 2)), append(fb.tgtGrad, mk(s, 2))
		fb.refTensor, fb.tgtTensor = append(fb.refTensor, mk(s, 3)), append(fb.tgtTensor, mk(s, 3))
		fb.warped, fb.mis, fb.flows = append(fb.warped, mk(s, 1)), append(fb.mis, mk(s, 2)), append(fb.flows, mk(s, 2))
	}
	ref, tgt, _, _ := flowScene(w, h, 1)
	if err := d.WritePixels(fb.refLum[0], ref); err != nil {
		t.Fatal(err)
	}
	if err := d.WritePixels(fb.tgtLum[0], tgt); err != nil {
		t.Fatal(err)
	}
	if err := fb.pyramid(d.Ops(), fb.refLum, fb.refGrad, fb.refTensor); err != nil {
		t.Fatal(err)
	}
	return fb
}

// pyramid is matte's per-frame pyramid: area-downscaled luma, gradient
// and box-filtered structure tensor at every level.
func (fb *flowBench) pyramid(o Ops, lum, grad, tensor []Image) error {
	for l := range fb.sizes {
		if l > 0 {
			if err := o.ResizeArea(lum[l], lum[l-1]); err != nil {
				return err
			}
		}
		if err := o.Gradient(grad[l], lum[l]); err != nil {
			return err
		}
		if err := o.FlowTensor(tensor[l], grad[l]); err != nil {
			return err
		}
		if err := o.BoxFilter(tensor[l], tensor[l], fb.win); err != nil {
			return err
		}
	}
	return nil
}

// iteration is one solver iteration at level l: Warp, FlowMismatch,
// BoxFilter, FlowSolve.
func (fb *flowBench) iteration(o Ops, l int, sc float32) error {
	if err := o.Warp(fb.warped[l], fb.tgtLum[l], fb.flows[l], sc); err != nil {
		return err
	}
	if err := o.FlowMismatch(fb.mis[l], fb.refGrad[l], fb.refLum[l], fb.warped[l]); err != nil {
		return err
	}
	if err := o.BoxFilter(fb.mis[l], fb.mis[l], fb.win); err != nil {
		return err
	}
	return o.FlowSolve(fb.flows[l], fb.refTensor[l], fb.mis[l], fb.lambda, fb.step, sc)
}

// frame is the device work of one frame's flow: the new frame's pyramid,
// then the coarse-to-fine flow (every level's iterations, the upsampling
// between levels and the Gaussian smoothing after each).
func (fb *flowBench) frame(o Ops) error {
	if err := fb.pyramid(o, fb.tgtLum, fb.tgtGrad, fb.tgtTensor); err != nil {
		return err
	}
	top := len(fb.sizes) - 1
	for l := top; l >= 0; l-- {
		if l == top {
			if err := o.Fill(fb.flows[l], []float32{0, 0}); err != nil {
				return err
			}
		} else if err := o.ResizeBilinear(fb.flows[l], fb.flows[l+1]); err != nil {
			return err
		}
		sc := float32(fb.sizes[l][0]) / float32(fb.sizes[0][0])
		for range fb.iters {
			if err := fb.iteration(o, l, sc); err != nil {
				return err
			}
		}
		if err := o.GaussianBlur(fb.flows[l], fb.flows[l], fb.sigma); err != nil {
			return err
		}
	}
	return nil
}

// syncer is what Device may offer to wait for queued work (the CUDA
// device); the CPU finishes every op before it returns.
type syncer interface{ Sync() error }

// benchFlow runs the flow benchmark's two cases on d: Frame (one frame's
// pyramid and coarse-to-fine flow, 4 levels x 4 iterations) and
// Iteration (one solver iteration at full size), in frames/s (iterations/s
// for Iteration).
func benchFlow(b *testing.B, d Device, w, h int) {
	fb := newFlowBench(b, d, w, h)
	o := d.Ops()
	wait := func() error {
		if s, ok := d.(syncer); ok {
			return s.Sync()
		}
		return nil
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"Frame", func() error { return fb.frame(o) }},
		{"Iteration", func() error { return fb.iteration(o, 0, 1) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			if err := c.run(); err != nil { // warm-up: tables, pool
				b.Fatal(err)
			}
			if err := wait(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
			if err := wait(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// BenchmarkFlow854x480 is the flow benchmark on the CPU backend (all
// cores); BenchmarkCUDAFlow854x480 is the same on the GPU.
func BenchmarkFlow854x480(b *testing.B) {
	d := NewCPU(0)
	defer d.Close()
	benchFlow(b, d, 854, 480)
}

// TestFlowBenchConverges checks that the benchmark's op sequence does
// real work: on the scene, one frame's flow lands near the true flow
// inside the image (away from the borders).
func TestFlowBenchConverges(t *testing.T) {
	d := NewCPU(0)
	defer d.Close()
	const w, h = 160, 96
	fb := newFlowBench(t, d, w, h)
	if err := fb.frame(d.Ops()); err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadPixels(fb.flows[0])
	if err != nil {
		t.Fatal(err)
	}
	_, _, want, _ := flowScene(w, h, 1)
	n, bad := 0, 0
	for y := 16; y < h-16; y++ {
		for x := 16; x < w-16; x++ {
			i := y*w + x
			n++
			if math.Hypot(float64(got[i]-want[i]), float64(got[w*h+i]-want[w*h+i])) > 0.25 {
				bad++
			}
		}
	}
	if bad > n/20 {
		t.Fatalf("%d of %d interior flow vectors are more than 0.25 px from the true flow", bad, n)
	}
}
