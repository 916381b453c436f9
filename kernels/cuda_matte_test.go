//go:build cuda

package kernels

import (
	"testing"
)

// Inputs and cases of the MatteOps rows of opCases (cuda_ops_test.go).

// matteRand returns n values in [lo, hi) from a generator seeded by the
// test size and salt (the same on both devices).
func matteRand(in *opInputs, salt uint64, n int, lo, hi float64) []float32 {
	return randVals(newRNG(uint64(in.w)*1000003+uint64(in.h)*31+salt), n, lo, hi)
}

// scene is flowScene at the test size.
func scene(in *opInputs) (ref, tgt, fwd, bwd []float32) { return flowScene(in.w, in.h, 7) }

// matteImageCase is an op writing one image of c channels.
func matteImageCase(name string, tol float64, c int, f func(o Ops, d Device, dst Image, in *opInputs, put2 func(c int, data []float32) Image) error) opCase {
	return opCase{name, tol, func(t testing.TB, d Device, in *opInputs) []float64 {
		dst, err := d.NewImage(in.w, in.h, c)
		if err != nil {
			t.Fatal(err)
		}
		up := func(_ int, data []float32) Image { return put(t, d, in.w, in.h, data) }
		if err := f(d.Ops(), d, dst, in, up); err != nil {
			t.Fatal(err)
		}
		return read(t, d, dst)
	}}
}

// flowSolveSceneCase runs the real solver chain on the scene: tensor
// (Gradient, FlowTensor, BoxFilter 3) of ref, then iters times Warp of
// tgt by the current flow (starting at half the true flow), FlowMismatch,
// BoxFilter, FlowSolve, at pyramid scale sc. Every op of the chain runs
// on the device under test.
func flowSolveSceneCase(name string, iters int, sc, maxStep float32) opCase {
	return opCase{name, 0, func(t testing.TB, d Device, in *opInputs) []float64 {
		o := d.Ops()
		ref, tgt, fwd, _ := scene(in)
		w, h := in.w, in.h
		half := make([]float32, len(fwd))
		for i, v := range fwd {
			half[i] = v * 0.5 / sc
		}
		rI, tI, fl := put(t, d, w, h, ref), put(t, d, w, h, tgt), put(t, d, w, h, half)
		mk := func(c int) Image {
			m, err := d.NewImage(w, h, c)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		g, ten, warped, mis := mk(2), mk(3), mk(1), mk(2)
		check := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		check(o.Gradient(g, rI))
		check(o.FlowTensor(ten, g))
		check(o.BoxFilter(ten, ten, 3))
		for range iters {
			check(o.Warp(warped, tI, fl, sc))
			check(o.FlowMismatch(mis, g, rI, warped))
			check(o.BoxFilter(mis, mis, 3))
			check(o.FlowSolve(fl, ten, mis, 2e-4, maxStep, sc))
		}
		return append(read(t, d, fl), read(t, d, warped)...)
	}}
}

// histCase is ColourHistogram of the random RGB image (values in
// [-0.05, 1.2): both clamps are hit).
func histCase(name string, tol float64, bins int, weighted bool) opCase {
	return opCase{name, tol, func(t testing.TB, d Device, in *opInputs) []float64 {
		var wt Image
		if weighted {
			wt = put(t, d, in.w, in.h, in.gray)
		}
		h, err := d.Ops().ColourHistogram(put(t, d, in.w, in.h, in.rgb), wt, bins)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}}
}

// fuseTable is a colour table of bins^3 probabilities in [0, 1] with
// exact 0s and 1s (clamped by logit).
func fuseTable(in *opInputs, bins int) []float32 {
	t := matteRand(in, 5, bins*bins*bins, -0.1, 1.1)
	for i := range t {
		t[i] = min(max(t[i], 0), 1)
	}
	return t
}

// fuseCase is MatteFuse with the evidence picked by the flags.
func fuseCase(name string, prior, conf, local, plate, table bool, p FuseParams) opCase {
	return matteImageCase(name, 1e-7, 1, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		n := in.w * in.h
		var pr, cf, lf, lb, lm, pl Image
		var tab []float32
		if prior {
			pr = up(1, in.alpha)
		}
		if conf {
			cf = up(1, in.gray)
		}
		if local {
			// Box-mean style inputs: fg and bg premultiplied by the
			// coverage m (0..1, with values on both sides of 0.02/0.98).
			m := matteRand(in, 11, n, -0.05, 1.05)
			for i := range m {
				m[i] = min(max(m[i], 0), 1)
			}
			fg, bg := make([]float32, 3*n), make([]float32, 3*n)
			for c := range 3 {
				for i := range n {
					fg[c*n+i] = in.rgb[c*n+i] * m[i]
					bg[c*n+i] = in.rgb2[c*n+i] * (1 - m[i])
				}
			}
			lf, lb, lm = up(3, fg), up(3, bg), up(1, m)
		}
		if plate {
			pl = up(3, matteRand(in, 13, 3*n, -0.05, 1.2))
		}
		if table {
			tab = fuseTable(in, p.Bins)
		}
		return o.MatteFuse(dst, up(3, in.rgb), pr, cf, lf, lb, lm, pl, tab, p)
	})
}

// chromaCase is ChromaKey of a green or blue screen plate: the random
// RGB image with the screen colour over the left half. It returns alpha
// then the despilled image; inPlace writes the despill over src.
func chromaCase(name string, channel int, inPlace bool) opCase {
	return opCase{name, 0, func(t testing.TB, d Device, in *opInputs) []float64 {
		n := in.w * in.h
		screen := [3]float32{0.1, 0.8, 0.15}
		if channel == 2 {
			screen = [3]float32{0.05, 0.2, 0.9}
		}
		src := append([]float32(nil), in.rgb...)
		noise := matteRand(in, 17, 3*n, -0.05, 0.05)
		for y := range in.h {
			for x := 0; x < (in.w+1)/2; x++ {
				i := y*in.w + x
				for c := range 3 {
					src[c*n+i] = screen[c] + noise[c*n+i]
				}
			}
		}
		s := put(t, d, in.w, in.h, src)
		a, _ := d.NewImage(in.w, in.h, 1)
		dst := s
		if !inPlace {
			dst, _ = d.NewImage(in.w, in.h, 3)
		}
		if err := d.Ops().ChromaKey(a, dst, s, ChromaParams{Screen: screen, Channel: channel, Low: 0.1, High: 0.6}); err != nil {
			t.Fatal(err)
		}
		return append(read(t, d, a), read(t, d, dst)...)
	}}
}

// matteOpCases are the MatteOps rows of opCases. Tolerances: 0 except
// FlowConfidence and MatteFuse (1e-7: one float32 step of a value below
// 1, from the device's float64 exp/log against Go's math.Exp/Log) and
// the weighted ColourHistogram (1e-9 relative: float64 atomics add in no
// fixed order; unweighted counts are exact).
var matteOpCases = []opCase{
	matteImageCase("Gradient", 0, 2, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		return o.Gradient(dst, up(1, in.gray))
	}),
	matteImageCase("Gradient/scene", 0, 2, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		ref, _, _, _ := scene(in)
		return o.Gradient(dst, up(1, ref))
	}),
	matteImageCase("Warp/random-3ch", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		return o.Warp(dst, up(3, in.rgb), up(2, matteRand(in, 1, 2*in.w*in.h, -4, 4)), 0.5)
	}),
	matteImageCase("Warp/scene", 0, 1, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		_, tgt, fwd, _ := scene(in)
		return o.Warp(dst, up(1, tgt), up(2, fwd), 1)
	}),
	matteImageCase("Warp/scene-level2", 0, 1, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		_, tgt, fwd, _ := scene(in)
		return o.Warp(dst, up(1, tgt), up(2, fwd), 0.25)
	}),
	matteImageCase("Shift/random-3ch", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		return o.Shift(dst, up(3, in.rgb), 2.37, -1.61)
	}),
	matteImageCase("Shift/beyond-border", 0, 1, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		return o.Shift(dst, up(1, in.gray), -float32(in.w)-3.5, 0.25)
	}),
	matteImageCase("FlowTensor", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		return o.FlowTensor(dst, up(2, matteRand(in, 2, 2*in.w*in.h, -1, 1)))
	}),
	matteImageCase("FlowMismatch", 0, 2, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		return o.FlowMismatch(dst, up(2, matteRand(in, 3, 2*in.w*in.h, -1, 1)), up(1, in.gray), up(1, in.alpha))
	}),
	matteImageCase("FlowSolve/random", 0, 2, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		n := in.w * in.h
		if err := o.Copy(dst, up(2, matteRand(in, 4, 2*n, -3, 3))); err != nil {
			return err
		}
		// Tensors with det > 0, det < 0 and det ~ 0 (b^2 near ac), and
		// mismatches large enough that maxStep clips some steps.
		ten := matteRand(in, 6, 3*n, -0.2, 1)
		for i := range n {
			ten[i], ten[2*n+i] = max(ten[i], 0), max(ten[2*n+i], 0)
		}
		return o.FlowSolve(dst, up(3, ten), up(2, matteRand(in, 7, 2*n, -0.5, 0.5)), 2e-4, 0.75, 0.5)
	}),
	flowSolveSceneCase("FlowSolve/scene-chain", 3, 1, 1),
	flowSolveSceneCase("FlowSolve/scene-chain-level1", 2, 0.5, 0.5),
	matteImageCase("FlowConfidence/scene", 1e-7, 1, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		_, _, fwd, bwd := scene(in)
		return o.FlowConfidence(dst, up(2, fwd), up(2, bwd), 0.5)
	}),
	matteImageCase("FlowConfidence/random", 1e-7, 1, func(o Ops, _ Device, dst Image, in *opInputs, up func(int, []float32) Image) error {
		n := in.w * in.h
		return o.FlowConfidence(dst, up(2, matteRand(in, 8, 2*n, -2, 2)), up(2, matteRand(in, 9, 2*n, -2, 2)), 1.5)
	}),
	histCase("ColourHistogram/16-weighted", 1e-9, 16, true),
	histCase("ColourHistogram/2", 0, 2, false),
	histCase("ColourHistogram/64-weighted", 1e-9, 64, true),
	fuseCase("MatteFuse/all", true, true, true, true, true,
		FuseParams{Prior: 1.5, Global: 0.8, Local: 1.2, Plate: 0.7, LocalSigma: 0.1, PlateThreshold: 0.15, PlateSoftness: 0.05, Bins: 8}),
	fuseCase("MatteFuse/prior-only", true, false, false, false, false, FuseParams{Prior: 4}),
	fuseCase("MatteFuse/plate-only", false, false, false, true, false, FuseParams{Plate: 1, PlateThreshold: 0.1, PlateSoftness: 0.04}),
	fuseCase("MatteFuse/global-local", false, false, true, false, true,
		FuseParams{Global: 1, Local: 0.5, LocalSigma: 0.2, Bins: 32}),
	fuseCase("MatteFuse/none", false, false, false, false, false, FuseParams{}),
	chromaCase("ChromaKey/green", 1, false),
	chromaCase("ChromaKey/blue-in-place", 2, true),
}
